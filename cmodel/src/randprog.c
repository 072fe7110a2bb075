/* SPDX-License-Identifier: Apache-2.0 */
/* Constrained-random core programs (tpu/randprog.h). Every field is drawn inside the rule
   docs/isa.md "Errors" gives for it -- with the ends of each range drawn often (row 0, the
   last row that fits, the widest cols, stride 0 and the packed stride) -- except in the one
   instruction that must fail, which breaks exactly one rule. The outcome is predicted from
   the construction, and checked against tpu_insn_check (the assembler's --check) as a
   second opinion; tpu-run is the third (tests/core_model/random.sh). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpu/asm.h"
#include "tpu/matgen.h"
#include "tpu/randprog.h"

struct gen {
    uint64_t st;
    uint64_t tst;     /* lw transpose's coin: its own stream, so a seed's program is the one
                         it was before the flag existed, with " transpose" on some lw lines */
    const tpu_randprog_cfg_t *cfg;
    unsigned n;
    unsigned rows[3]; /* UB, ACC, WMEM */
    char *text;
    size_t len, cap;
    size_t insns;
    int have_lw;
    int oom;
    int board;        /* a core of a board: no collective among the local instructions */
    unsigned last_row[3], last_n[3]; /* the latest row range drawn in each memory */
    unsigned vform, rform;           /* the next vop / vred form (0: not drawn yet) */
};

static uint64_t rnd(struct gen *g) { return tpu_matgen_rand(&g->st); }

/* internal: uniform in [lo, hi] (lo <= hi) */
static uint64_t range(struct gen *g, uint64_t lo, uint64_t hi)
{
    return lo + rnd(g) % (hi - lo + 1u);
}

static int chance(struct gen *g, unsigned in) { return rnd(g) % in == 0; }

static void put(struct gen *g, const char *fmt, ...)
{
    va_list ap;
    char line[256];
    va_start(ap, fmt);
    int k = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= sizeof line) {
        g->oom = 1;
        return;
    }
    if (g->len + (size_t)k + 2 > g->cap) {
        size_t nc = g->cap ? g->cap * 2 : 4096;
        char *p = realloc(g->text, nc);
        if (p == NULL) {
            g->oom = 1;
            return;
        }
        g->text = p;
        g->cap = nc;
    }
    memcpy(g->text + g->len, line, (size_t)k);
    g->len += (size_t)k;
    g->text[g->len++] = '\n';
    g->text[g->len] = 0;
    if (line[0] != '#')
        g->insns++;
}

/* internal: a count 1..max, the ends often */
static unsigned count(struct gen *g, unsigned max)
{
    if (max <= 1)
        return 1;
    switch (rnd(g) % 4) {
    case 0: return 1;
    case 1: return max;
    default: return (unsigned)range(g, 1, max);
    }
}

/* internal: the first row of a run of `n` rows in a memory of `rows`: 0, the last that fits,
   or anywhere */
static unsigned row_for(struct gen *g, unsigned rows, unsigned n)
{
    unsigned hi = rows - n;
    switch (rnd(g) % 4) {
    case 0: return 0;
    case 1: return hi;
    default: return (unsigned)range(g, 0, hi);
    }
}

static const char *const mem_names[3] = { "ub", "acc", "wmem" };

/* internal: the first row of a run of `n` rows of memory `mem`: row_for's choice, or (one in
   three) a run that meets the latest one drawn in that memory, so that an instruction often
   touches the rows of the one before it (the hazard pairs of docs/isa.md "Timing") */
static unsigned row_in(struct gen *g, unsigned mem, unsigned n)
{
    unsigned rows = g->rows[mem], r;
    if (g->last_n[mem] != 0 && chance(g, 3)) {
        /* a start in [last - n + 1, last + last_n - 1], clamped so that the run fits */
        uint64_t lo = g->last_row[mem] + 1u > n ? g->last_row[mem] + 1u - n : 0;
        uint64_t hi = (uint64_t)g->last_row[mem] + g->last_n[mem] - 1u;
        if (hi > rows - n)
            hi = rows - n;
        r = lo <= hi ? (unsigned)range(g, lo, hi) : row_for(g, rows, n);
    } else {
        r = row_for(g, rows, n);
    }
    g->last_row[mem] = r;
    g->last_n[mem] = n;
    return r;
}

static unsigned cap_rows(const struct gen *g, unsigned mem, unsigned want)
{
    return want < g->rows[mem] ? want : g->rows[mem];
}

/* internal: a valid dma_in (any memory) or dma_out (UB or ACC) inside the host memory */
static void gen_dma(struct gen *g, int out)
{
    unsigned mem = out ? (unsigned)range(g, 0, 1) : (unsigned)range(g, 0, 2);
    unsigned e = mem == 1 ? 4u : 2u;
    unsigned n = count(g, cap_rows(g, mem, 32));
    unsigned cols = count(g, g->n);
    uint64_t stride;
    switch (rnd(g) % 4) {
    case 0: stride = 0; break;                                   /* every row the same words */
    case 1: stride = (uint64_t)cols * e; break;                  /* packed */
    default: stride = e * range(g, 0, 2048); break;              /* anything aligned */
    }
    uint64_t span = (uint64_t)(n - 1) * stride + (uint64_t)cols * e;
    if (span > g->cfg->host_bytes / 2) { /* a small host memory: packed rows */
        stride = (uint64_t)cols * e;
        span = (uint64_t)(n - 1) * stride + (uint64_t)cols * e;
    }
    uint64_t hi = (g->cfg->host_bytes - span) / e;
    uint64_t addr = e * (chance(g, 4) ? hi : range(g, 0, hi)); /* the image's last bytes too */
    if (!out && chance(g, 2) && g->cfg->host_bytes > 0x1000 + span + 4096) /* the input data */
        addr = 0x1000 + e * range(g, 0, 2048 / e);
    unsigned row = row_in(g, mem, n);
    put(g, "%s %s row=%u rows=%u cols=%u addr=0x%llx stride=%llu", out ? "dma_out" : "dma_in",
        mem_names[mem], row, n, cols, (unsigned long long)addr, (unsigned long long)stride);
}

/* internal: " transpose" for half of the lw instructions */
static const char *lw_flag(struct gen *g)
{
    return tpu_matgen_rand(&g->tst) % 2 ? " transpose" : "";
}

static void gen_lw(struct gen *g)
{
    unsigned w = row_in(g, 2, g->n);
    put(g, "lw w=%u%s", w, lw_flag(g));
    g->have_lw = 1;
}

static void gen_matmul(struct gen *g)
{
    unsigned m = count(g, cap_rows(g, 0, cap_rows(g, 1, 64)));
    static const char *const flags[] = { "", " accumulate", " acc_mode=overwrite" };
    const char *flag = flags[rnd(g) % 3];
    unsigned ub = row_in(g, 0, m), acc = row_in(g, 1, m);
    put(g, "matmul ub=%u acc=%u rows=%u%s", ub, acc, m, flag);
}

static const char *const vop_names[] = { "add", "sub", "mul", "max", "min", "cvt", "relu",
                                         "exp", "tanh", "sigmoid", "gelu", "recip", "log",
                                         "rsqrt" };

/* internal: the next of `forms` forms of an instruction: a random one first, then the ones
   after it in turn, so that a few hundred programs meet every form (op x memories x bcast) */
static unsigned next_form(struct gen *g, unsigned *k, unsigned forms)
{
    if (*k == 0)
        *k = 1u + (unsigned)range(g, 0, forms - 1u);
    unsigned f = (*k - 1u) % forms;
    *k = f + 2u;
    return f;
}

static void gen_vop(struct gen *g)
{
    /* forms: 5 binary ops x a, b, dst memory x bcast (80), 9 unary ops x a, dst memory (36) */
    unsigned f = next_form(g, &g->vform, 116), op, am, bm = 0, dm;
    int bcast = 0;
    if (f < 80) {
        op = f / 16;
        am = f & 1u;
        bm = (f >> 1) & 1u;
        dm = (f >> 2) & 1u;
        bcast = (f >> 3) & 1u;
    } else {
        op = 5u + (f - 80u) / 4u;
        am = (f - 80u) & 1u;
        dm = ((f - 80u) >> 1) & 1u;
    }
    int binary = op <= 4;
    unsigned n = count(g, cap_rows(g, 0, cap_rows(g, 1, 32)));
    char b[64] = "";
    unsigned ar = row_in(g, am, n), br = 0, dr;
    if (binary)
        br = row_in(g, bm, bcast ? 1 : n);
    dr = row_in(g, dm, n);
    /* docs/isa.md: dst may equal a (or a b that is not broadcast) but not partly overlap them,
       nor hold a broadcast b row it writes before its last row: such a vop is undefined (the
       RTL and the model may differ). Then dst takes a's rows (same memory), or b's, or moves
       away: its memory stays the one drawn, so that every a x b x dst memory combination
       comes out */
    for (int tries = 0;; tries++) {
        int part_a = dm == am && dr != ar && dr < ar + n && ar < dr + n;
        int part_b = binary && !bcast && dm == bm && dr != br && dr < br + n && br < dr + n;
        int in_b = bcast && dm == bm && dr <= br && br + 1u < dr + n;
        if (!part_a && !part_b && !in_b)
            break;
        if (tries == 0 && part_a)
            dr = ar;
        else if (tries == 1 && part_b)
            dr = br;
        else if (tries < 8)
            dr = row_for(g, g->rows[dm], n);
        else { /* the old rule: dst onto a, b the same rows or apart (a broadcast b: after) */
            dr = ar;
            dm = am;
            if (binary && !bcast && bm == dm && br != dr && br < dr + n && dr < br + n)
                br = dr;
            if (bcast && bm == dm && dr <= br && br + 1u < dr + n)
                br = dr + n - 1u; /* the last dst row: read before it is written */
            break;
        }
    }
    if (binary)
        snprintf(b, sizeof b, " b=%s:%u%s", mem_names[bm], br, bcast ? " bcast" : "");
    put(g, "vop %s a=%s:%u%s dst=%s:%u rows=%u", vop_names[op], mem_names[am], ar, b,
        mem_names[dm], dr, n);
}

/* internal: vred (red 1..3) or softmax (red 0): G rows of length L in chunks of N */
static void gen_reduce(struct gen *g, unsigned red)
{
    static const char *const reds[] = { "", "sum", "max", "min" };
    unsigned n = g->n;
    unsigned sm = 1u, dm = (unsigned)range(g, 0, 1); /* softmax reads ACC */
    if (red) { /* forms: op x src x dst memory, in turn as gen_vop's */
        unsigned f = next_form(g, &g->rform, 12);
        red = 1u + f / 4u;
        sm = f & 1u;
        dm = (f >> 1) & 1u;
    }
    for (int tries = 0; tries < 64; tries++) {
        unsigned G = count(g, 16), L = count(g, 3 * n), C = (L + n - 1) / n;
        unsigned cs = (unsigned)range(g, 0, 8), rs = (unsigned)range(g, 0, 8);
        if (rnd(g) % 3 == 0) { /* the layout tpu-mkprog uses: chunks G rows apart */
            cs = G;
            rs = 1;
        }
        uint64_t last = (uint64_t)(G - 1) * rs + (uint64_t)(C - 1) * cs;
        uint64_t dlast = red ? (G + n - 1) / n - 1u : last;
        if (last >= g->rows[sm] || dlast >= g->rows[dm])
            continue;
        /* the first and the last rows that fit, often */
        unsigned src = (unsigned)(chance(g, 3) ? g->rows[sm] - 1u - last
                                  : chance(g, 2) ? 0 : range(g, 0, g->rows[sm] - 1u - last));
        unsigned dst = (unsigned)(chance(g, 3) ? g->rows[dm] - 1u - dlast
                                  : chance(g, 2) ? 0 : range(g, 0, g->rows[dm] - 1u - dlast));
        /* docs/isa.md: dst rows among the src rows are undefined (the RTL writes a dst row
           while it still reads src rows), but a softmax in place (dst = src) */
        if (dm == sm && dst <= src + last && src <= dst + dlast && !(red == 0 && dst == src))
            continue;
        if (red)
            put(g, "vred %s src=%s:%u dst=%s:%u rows=%u length=%u chunk_stride=%u row_stride=%u",
                reds[red], mem_names[sm], src, mem_names[dm], dst, G, L, cs, rs);
        else
            put(g, "softmax src=acc:%u dst=%s:%u rows=%u length=%u chunk_stride=%u "
                "row_stride=%u", src, mem_names[dm], dst, G, L, cs, rs);
        return;
    }
    put(g, "nop");
}

/* internal: one valid instruction (no halt); no lw when lw_ok is 0 (an error-5 program) */
static void gen_valid(struct gen *g, int lw_ok)
{
    for (;;) {
        /* vop has 116 op x memory x broadcast forms (tpu-cover's insn bins): 6 in 20 */
        switch (rnd(g) % 20) {
        case 0: put(g, chance(g, 2) ? "nop" : "sync"); return;
        case 1: case 2: case 3: gen_dma(g, 0); return;
        case 4: case 5: gen_dma(g, 1); return;
        case 6: case 7:
            if (!lw_ok)
                continue;
            gen_lw(g);
            return;
        case 8: case 9:
            if (!g->have_lw) {
                if (!lw_ok)
                    continue;
                gen_lw(g); /* a matmul needs an lw since START */
            }
            gen_matmul(g);
            return;
        case 10: case 11: case 12: case 13: case 14: case 15: gen_vop(g); return;
        case 16: gen_reduce(g, (unsigned)range(g, 1, 3)); return;
        case 17: gen_reduce(g, 0); return;
        case 18: /* collectives on a core alone: complete at once */
            if (g->board) { /* on a board they are the rounds' (tpu_randprog_board) */
                put(g, "sync");
                return;
            }
            switch (rnd(g) % 3) {
            case 0: put(g, "barrier"); break;
            case 1:
                put(g, "allreduce acc row=%u rows=1%s", row_for(g, g->rows[1], 1),
                    chance(g, 2) ? " ring" : "");
                break;
            default: { /* from itself: valid, nothing to move */
                unsigned m = (unsigned)range(g, 0, 1), nr = count(g, cap_rows(g, m, 8));
                put(g, "bcast %s row=%u rows=%u root=0", mem_names[m], row_for(g, g->rows[m], nr),
                    nr);
            }
            }
            return;
        default: put(g, "nop"); return;
        }
    }
}

/* internal: the instruction that must fail with `code` */
static void gen_bad(struct gen *g, int code)
{
    switch (code) {
    case TPU_ERR_OPCODE: {
        unsigned op;
        do
            op = (unsigned)range(g, 0, 255);
        while (tpu_opcode_name(op) != NULL);
        put(g, ".insn 0x%x, 0x%llx, 0, 0", op, (unsigned long long)(rnd(g) & 0xffffffffu));
        break;
    }
    case TPU_ERR_ROW: /* one row past the end */
        if (chance(g, 2) && g->rows[2] - g->n + 1u <= 65535u)
            put(g, "lw w=%u%s", g->rows[2] - g->n + 1u, lw_flag(g));
        else
            put(g, "dma_in ub row=%u rows=2 cols=1 addr=0x1000", g->rows[0] - 1u);
        break;
    case TPU_ERR_COUNT:
        switch (rnd(g) % 3) {
        case 0: put(g, "vop relu a=ub:0 dst=ub:0 rows=0"); break;
        case 1: put(g, "dma_out wmem row=0 rows=1 cols=1 addr=0x1000"); break;
        default: put(g, "softmax src=ub:0 dst=ub:0 rows=1 length=1 chunk_stride=0 row_stride=0");
        }
        break;
    case TPU_ERR_ALIGN:
        put(g, "dma_in acc row=0 rows=1 cols=1 addr=0x%llx",
            (unsigned long long)(0x1000u + range(g, 1, 3)));
        break;
    case TPU_ERR_NO_LW:
        put(g, "matmul ub=0 acc=0 rows=1");
        break;
    case TPU_ERR_AXI: /* a read beat past the host memory: DECERR; the sync after it makes
                         the end independent of the AXI timing (what else dispatches before
                         the DMA completes depends on latency and back-pressure) */
        put(g, "dma_in ub row=0 rows=1 cols=1 addr=0x%llx",
            (unsigned long long)(g->cfg->host_bytes & ~(uint64_t)3));
        put(g, "sync");
        break;
    default: /* TPU_ERR_CORE: a core alone sends to itself */
        put(g, "send ub row=0 rows=1 core=0");
        break;
    }
}

/* internal: every row of every memory written first (see tpu_randprog) */
static void prologue(struct gen *g)
{
    put(g, "# every row of every memory written first");
    for (unsigned m = 0; m < 3; m++)
        for (unsigned r = 0; r < g->rows[m]; r += 65535u) {
            unsigned nr = g->rows[m] - r < 65535u ? g->rows[m] - r : 65535u;
            put(g, "dma_in %s row=%u rows=%u cols=%u addr=0x1000 stride=0", mem_names[m], r, nr,
                g->n);
        }
}

static int cfg_ok(const tpu_randprog_cfg_t *cfg)
{
    const tpu_core_geom_t *geo = &cfg->geom;
    return !(geo->n == 0 || geo->n > 256 || geo->ub_rows < geo->n || geo->acc_rows < geo->n ||
             geo->wmem_rows < geo->n || geo->imem_insns < 10 || cfg->host_bytes < 65536 ||
             cfg->host_bytes >= ((uint64_t)1 << 32));
}

int tpu_randprog(const tpu_randprog_cfg_t *cfg, tpu_randprog_t *out)
{
    memset(out, 0, sizeof *out);
    const tpu_core_geom_t *geo = &cfg->geom;
    if (!cfg_ok(cfg) || cfg->want_error < -1 || cfg->want_error > 8)
        return -1;
    struct gen g;
    memset(&g, 0, sizeof g);
    /* the seed hashed: seed * G + c would make seed s+1's stream seed s's shifted by one draw
       (splitmix64 adds G per draw), and neighbouring seeds near copies of each other */
    uint64_t h = cfg->seed ^ 0x5EED5EED5EED5EEDull;
    g.st = tpu_matgen_rand(&h);
    g.tst = g.st ^ 0x7A4E5B05E0000000ull;
    g.cfg = cfg;
    g.n = geo->n;
    g.rows[0] = geo->ub_rows;
    g.rows[1] = geo->acc_rows;
    g.rows[2] = geo->wmem_rows;
    unsigned maxi = cfg->max_insns ? cfg->max_insns : 48u;
    if (maxi > geo->imem_insns - 8u) /* the prologue (at most 6) and the halt */
        maxi = geo->imem_insns - 8u;
    int code = cfg->want_error;
    if (code < 0)
        code = rnd(&g) % 3 == 0 ? (int)range(&g, 1, 8) : 0;
    /* each instruction generates at most two (an lw before a matmul) */
    unsigned k = (unsigned)range(&g, 1, maxi / 2 ? maxi / 2 : 1);
    unsigned bad_at = code ? (unsigned)range(&g, 0, k - 1) : k;
    put(&g, "# tpu-mkprog random --mxu %u --seed %llu: %u instructions, expect %s %d", g.n,
        (unsigned long long)cfg->seed, k, code ? "error" : "done", code);
    out->expect_code = code;
    /* every row of UB, ACC and WMEM written first (stride 0: the same words from the input in
       each), so that no instruction reads a never-written row: the results are defined, and
       the same on the RTL, whose memories start random (X-initialisation) */
    prologue(&g);
    for (unsigned i = 0; i < k && !g.oom; i++) {
        if (code != 0 && code != TPU_ERR_PC_END && i == bad_at) {
            out->expect_pc = (uint32_t)g.insns;
            gen_bad(&g, code);
            continue;
        }
        /* an error-5 program has no lw before its bad matmul */
        gen_valid(&g, !(code == TPU_ERR_NO_LW && i < bad_at));
    }
    if (code == TPU_ERR_PC_END)
        out->expect_pc = geo->imem_insns; /* no halt: the rest of IMEM is nop */
    else
        put(&g, "halt");
    if (g.oom || g.insns > geo->imem_insns) {
        free(g.text);
        return -1;
    }
    /* the second opinion: the dispatch checks see the same first error */
    tpu_insn_t *prog = NULL;
    size_t cnt = 0;
    char *errs = NULL;
    if (tpu_asm_len(g.text, g.len, "random.s", g.n, &prog, &cnt, &errs) != 0) {
        free(errs);
        free(g.text);
        return -1;
    }
    free(errs);
    int lw = 0, first = 0;
    uint32_t first_pc = 0;
    for (size_t i = 0; i < cnt && !first; i++) {
        tpu_dinsn_t d;
        tpu_insn_decode(prog[i], &d);
        int e = tpu_insn_check_board(&d, geo, 0, 1);
        if (e == 0 && d.opcode == TPU_OP_MATMUL && !lw)
            e = TPU_ERR_NO_LW;
        if (d.opcode == TPU_OP_LW)
            lw = 1;
        if (e) {
            first = e;
            first_pc = (uint32_t)i;
        }
    }
    free(prog);
    int checks = code == TPU_ERR_PC_END || code == TPU_ERR_AXI ? 0 : code;
    if (first != checks || (first && first_pc != out->expect_pc)) {
        free(g.text);
        return -1; /* the generator and the checks disagree: a bug in one of them */
    }
    out->text = g.text;
    out->insns = g.insns;
    out->in_addr = 0x1000;
    out->in_bytes = 4096;
    return 0;
}

int tpu_randprog_board(const tpu_randprog_cfg_t *cfg, unsigned cores, char **texts,
                       size_t *insns)
{
    if (!cfg_ok(cfg) || cores == 0 || cores > 64)
        return -1;
    struct gen g[64], shared;
    memset(&shared, 0, sizeof shared);
    shared.st = cfg->seed * 0xD1B54A32D192ED03ull + 0xB0A2D;
    shared.tst = shared.st ^ 0x7A4E5B05E0000000ull;
    unsigned maxi = cfg->max_insns ? cfg->max_insns : 48u;
    if (maxi > cfg->geom.imem_insns - 8u)
        maxi = cfg->geom.imem_insns - 8u;
    for (unsigned i = 0; i < cores; i++) {
        memset(&g[i], 0, sizeof g[i]);
        uint64_t h = (cfg->seed ^ 0xB0A2DB0A2DB0A2DBull) + 0x1000193ull * (i + 1u);
        g[i].st = tpu_matgen_rand(&h); /* hashed, as tpu_randprog's */
        g[i].tst = g[i].st ^ 0x7A4E5B05E0000000ull;
        g[i].cfg = cfg;
        g[i].n = cfg->geom.n;
        g[i].rows[0] = cfg->geom.ub_rows;
        g[i].rows[1] = cfg->geom.acc_rows;
        g[i].rows[2] = cfg->geom.wmem_rows;
        g[i].board = 1;
        put(&g[i], "# tpu-mkprog random-board --cores %u --mxu %u --seed %llu: core %u, expect "
            "done", cores, g[i].n, (unsigned long long)cfg->seed, i);
        prologue(&g[i]);
    }
    /* rounds: local instructions (each core its own), then the same collective everywhere;
       every core has at most maxi instructions besides the prologue and the halt */
    for (;;) {
        size_t most = 0;
        for (unsigned i = 0; i < cores; i++)
            most = g[i].insns > most ? g[i].insns : most;
        if (most + 8u > (size_t)maxi + 6u)
            break;
        for (unsigned i = 0; i < cores; i++) {
            unsigned local = (unsigned)range(&g[i], 0, 3);
            for (unsigned k = 0; k < local; k++)
                gen_valid(&g[i], 1);
        }
        /* one round in four moves hundreds of rows: the network, not the prologue's DMA,
           then takes most of a core's cycles (the congestion bin of tpu-cover) */
        unsigned cap = cfg->coll_rows ? cfg->coll_rows : 2048u;
        unsigned n = cap > 8u && chance(&shared, 4)
                         ? (unsigned)range(&shared, cap < 256u ? 9u : 256u, cap)
                         : count(&shared, cap < 8u ? cap : 8u);
        unsigned mem = (unsigned)range(&shared, 0, 1);
        switch (rnd(&shared) % 4) {
        case 0:
            for (unsigned i = 0; i < cores; i++)
                put(&g[i], "barrier");
            break;
        case 1: { /* one ACC region, the same rows on every core */
            unsigned nn = n < g[0].rows[1] ? n : g[0].rows[1];
            unsigned row = row_for(&shared, g[0].rows[1], nn);
            int ring = chance(&shared, 2);
            for (unsigned i = 0; i < cores; i++)
                put(&g[i], "allreduce acc row=%u rows=%u%s", row, nn, ring ? " ring" : "");
            break;
        }
        case 2: { /* from a random root into each core's own rows */
            unsigned nn = n < g[0].rows[mem] ? n : g[0].rows[mem];
            unsigned root = (unsigned)range(&shared, 0, cores - 1);
            for (unsigned i = 0; i < cores; i++)
                put(&g[i], "bcast %s row=%u rows=%u root=%u", mem_names[mem],
                    row_for(&g[i], g[i].rows[mem], nn), nn, root);
            break;
        }
        default: /* pairs (2k, 2k+1): a send and the matching recv; a core left alone waits */
            if (cores < 2) {
                for (unsigned i = 0; i < cores; i++)
                    put(&g[i], "barrier");
                break;
            }
            for (unsigned a = 0; a + 1 < cores; a += 2) {
                unsigned nn = n < g[0].rows[mem] ? n : g[0].rows[mem];
                unsigned from = chance(&shared, 2) ? a : a + 1, to = from == a ? a + 1 : a;
                put(&g[from], "send %s row=%u rows=%u core=%u", mem_names[mem],
                    row_for(&g[from], g[from].rows[mem], nn), nn, to);
                put(&g[to], "recv %s row=%u rows=%u core=%u", mem_names[mem],
                    row_for(&g[to], g[to].rows[mem], nn), nn, from);
            }
            break;
        }
    }
    int bad = 0;
    for (unsigned i = 0; i < cores; i++) {
        put(&g[i], "halt");
        bad |= g[i].oom || g[i].insns > cfg->geom.imem_insns;
    }
    for (unsigned i = 0; i < cores; i++) {
        if (bad) {
            free(g[i].text);
            texts[i] = NULL;
        } else {
            texts[i] = g[i].text;
            insns[i] = g[i].insns;
        }
    }
    return bad ? -1 : 0;
}

void tpu_randprog_free(tpu_randprog_t *p)
{
    free(p->text);
    memset(p, 0, sizeof *p);
}
