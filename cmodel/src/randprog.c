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
    uint64_t ast;     /* matmul acc_mode=first:lL's draws (and the reserved acc_first of error
                         1): their own stream too, so a seed's program is otherwise the one it
                         was before the mode existed */
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
    /* the program as instructions, beside its text (put assembles each line): the loop nests
       are checked by running it through the sequencer (tpu_seq_*) while it is generated */
    tpu_insn_t *prog;
    size_t nprog, capprog;
    int loops;        /* generate loop nests (docs/isa.md "Loops") */
    unsigned depth;   /* the loop levels enclosing the instruction gen_valid draws (0: none;
                         a nest's body at level l: l + 1) */
    unsigned labels;  /* labels used so far (L<k>) */
    unsigned self, cores; /* the core this program runs on, and the board's size */
    uint64_t mst;     /* the modulus form's draws (docs/isa.md "Loops": stride xR mod=M): its
                         own stream, as tst and ast */
    unsigned modk[TPU_XREGS]; /* each register's modulus k at the end of the program so far
                                 (0: none) */
};

static uint64_t rnd(struct gen *g) { return tpu_matgen_rand(&g->st); }

/* internal: uniform in [lo, hi] (lo <= hi) */
static uint64_t range(struct gen *g, uint64_t lo, uint64_t hi)
{
    return lo + rnd(g) % (hi - lo + 1u);
}

static int chance(struct gen *g, unsigned in) { return rnd(g) % in == 0; }

static void add_insn(struct gen *g, tpu_insn_t raw)
{
    if (g->nprog == g->capprog) {
        size_t nc = g->capprog ? g->capprog * 2 : 256;
        tpu_insn_t *p = realloc(g->prog, nc * sizeof *p);
        if (p == NULL) {
            g->oom = 1;
            return;
        }
        g->prog = p;
        g->capprog = nc;
    }
    g->prog[g->nprog++] = raw;
}

/* internal: one line of text. raw: the instruction it is (a line naming labels), or NULL:
   assemble the line itself; label: a line defining a label, no instruction. */
static void vput(struct gen *g, const tpu_insn_t *raw, int label, const char *fmt, va_list ap)
{
    char line[256];
    int k = vsnprintf(line, sizeof line, fmt, ap);
    if (k < 0 || (size_t)k >= sizeof line) {
        g->oom = 1;
        return;
    }
    if (g->len + (size_t)k + 2 > g->cap) {
        size_t nc = g->cap ? g->cap * 2 : 4096;
        while (g->len + (size_t)k + 2 > nc)
            nc *= 2;
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
    if (line[0] == '#' || label)
        return;
    g->insns++;
    if (raw) {
        add_insn(g, *raw);
        return;
    }
    tpu_insn_t *one = NULL;
    size_t cnt = 0;
    if (tpu_asm_len(line, (size_t)k, "randprog.s", 0, &one, &cnt, NULL) != 0 || cnt != 1)
        g->oom = 1; /* a line of the generator's that does not assemble: a bug */
    else
        add_insn(g, one[0]);
    free(one);
}

static void put(struct gen *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vput(g, NULL, 0, fmt, ap);
    va_end(ap);
}

static void put_raw(struct gen *g, tpu_insn_t raw, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vput(g, &raw, 0, fmt, ap);
    va_end(ap);
}

static void put_label(struct gen *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vput(g, NULL, 1, fmt, ap);
    va_end(ap);
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

static uint64_t arnd(struct gen *g) { return tpu_matgen_rand(&g->ast); }

static uint64_t mrnd(struct gen *g) { return tpu_matgen_rand(&g->mst); }

/* internal: `stride xR mod=M` (k = log2 M; 0: none), its register's modulus noted */
static void put_mod(struct gen *g, unsigned r, unsigned k)
{
    put(g, "stride x%u mod=%u", r, k ? 1u << k : 0u);
    g->modk[r] = k;
}

/* internal: the accumulate mode of a matmul: overwrite, accumulate, or (loops on) one of
   acc_mode=first:l0 .. l3 (docs/isa.md "Loops": it overwrites when i_L .. i_3 are all 0).
   In a nest's body, one matmul in two takes it, three in four of those on a level enclosing
   it (overwrite in the first iteration of level L, accumulate in the others; the innermost
   one time in two, else any: the deep levels of the rarer deep nests come out too) and the
   rest on a level inside its own (no iteration of it runs there: it always overwrites);
   outside the nests one in six, on any level (all indices 0: it overwrites). Every row of ACC
   is written first (the prologue), so accumulating onto any row is defined. */
static void gen_matmul(struct gen *g)
{
    unsigned m = count(g, cap_rows(g, 0, cap_rows(g, 1, 64)));
    static const char *const flags[] = { "", " accumulate", " acc_mode=overwrite" };
    const char *flag = flags[rnd(g) % 3];
    char first[32];
    if (g->loops && arnd(g) % (g->depth ? 2u : 6u) == 0) {
        unsigned d = g->depth, lv;
        if (d > 0 && (d == TPU_LOOP_LEVELS || arnd(g) % 4 != 0))  /* a level enclosing it: */
            lv = arnd(g) % 2 ? d - 1u : (unsigned)(arnd(g) % d); /* the innermost in two */
        else
            lv = d + (unsigned)(arnd(g) % (TPU_LOOP_LEVELS - d)); /* a level inside its own */
        snprintf(first, sizeof first, " acc_mode=first:l%u", lv);
        flag = first;
    }
    unsigned ub = row_in(g, 0, m), acc = row_in(g, 1, m);
    put(g, "matmul ub=%u acc=%u rows=%u%s", ub, acc, m, flag);
}

static const char *const vop_names[] = { "add", "sub", "mul", "max", "min", "cvt", "relu",
                                         "exp", "tanh", "sigmoid", "gelu", "recip", "log",
                                         "rsqrt", "erf" };

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
    /* forms: 5 binary ops x a, b, dst memory x bcast (80), 10 unary ops x a, dst memory (40) */
    unsigned f = next_form(g, &g->vform, 120), op, am, bm = 0, dm;
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

/* internal: 1 when two chunks of a softmax's logical rows are the same row (G logical rows
   of C chunks, chunk c of row g at g*rs + c*cs): a softmax writes its scratch over its src
   chunks, so such a row is read after another logical row (or chunk) wrote it, and the RTL,
   which overlaps the passes of different logical rows, and the model differ (docs/isa.md
   "softmax"; make regress found it) */
static int softmax_chunks_alias(uint64_t G, uint64_t C, uint64_t cs, uint64_t rs)
{
    if (G * C <= 1)
        return 0;
    for (uint64_t a = 0; a < G * C; a++)
        for (uint64_t b = a + 1; b < G * C; b++)
            if ((a / C) * rs + (a % C) * cs == (b / C) * rs + (b % C) * cs)
                return 1;
    return 0;
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
        if (!red && softmax_chunks_alias(G, C, cs, rs))
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
        /* (loops on) one time in four a stride's modulus form with a reserved k (17 .. 31),
           or with one of the form's reserved bits (flags[3], w1[31:5], w2, w3): drawn from
           the modulus form's own stream */
        if (g->loops && mrnd(g) % 4 == 0) {
            unsigned r = 1u + (unsigned)(mrnd(g) % (TPU_XREGS - 1u));
            unsigned f = (r & 7u) | ((r >> 3) & 1u) << TPU_STRIDE_XREG_HI | 0x20u;
            uint32_t w1 = (uint32_t)(TPU_STRIDE_MOD_K_MAX + 1u +
                                     mrnd(g) % (31u - TPU_STRIDE_MOD_K_MAX));
            uint32_t w2 = 0;
            const char *what = "reserved k";
            switch (mrnd(g) % 4) {
            case 0: f |= 8u; w1 = (uint32_t)(mrnd(g) % 17u); what = "flags[3]"; break;
            case 1: w2 = 1u + (uint32_t)(mrnd(g) % 0xFFFFu); w1 = (uint32_t)(mrnd(g) % 17u);
                what = "w2"; break;
            default: break;
            }
            put(g, ".insn 0x%x, 0x%x, 0x%x, 0   # stride x%u, modulus form: %s",
                TPU_OP_STRIDE | f << 8, (unsigned)w1, (unsigned)w2, r, what);
            break;
        }
        /* (loops on) one time in four a `loop` of a reserved level (6, 7: flags[2:0]) */
        if (g->loops && arnd(g) % 4 == 0) {
            unsigned lv = TPU_LOOP_LEVELS + (unsigned)(arnd(g) % (8u - TPU_LOOP_LEVELS));
            put(g, ".insn 0x%x, 1, 1, 0   # loop %u count=1 body=1: reserved level",
                TPU_OP_LOOP | lv << 8 | 1u << 16, lv);
            break;
        }
        /* (loops on) one time in three of the rest a reserved matmul encoding: acc_first
           (flags[3:1]) beside accumulate (flags[0]), or acc_first 7 (no such level); its fields
           drawn from its own stream. Code 1 comes before the missing lw's 5 (docs/isa.md
           "Errors") */
        if (g->loops && arnd(g) % 3 == 0) {
            unsigned af = 1u + (unsigned)(arnd(g) % 7u);
            unsigned acc = af > TPU_LOOP_LEVELS ? (unsigned)(arnd(g) % 2u) : 1u;
            unsigned m = 1u + (unsigned)(arnd(g) % cap_rows(g, 0, cap_rows(g, 1, 8)));
            unsigned ub = (unsigned)(arnd(g) % (g->rows[0] - m + 1u));
            unsigned ar = (unsigned)(arnd(g) % (g->rows[1] - m + 1u));
            unsigned f = acc | af << 1;
            put(g, ".insn 0x%x, 0x%x, 0x%x, 0   # matmul rows=%u, acc_first %u%s: reserved",
                TPU_OP_MATMUL | f << 8 | m << 16, ub, ar, m, af, acc ? " beside accumulate" : "");
            break;
        }
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

/* ---- Loop nests (docs/isa.md "Loops") ----
   A nest is built as a tree of loops (levels 0 .. 3; an inner loop hoisted before its outer
   body, armed once, or re-armed at its place in the outer body; sibling loops at one level),
   its bodies filled with gen_valid's instructions (straight-line valid, each on its own), then
   index registers are put on their address operands and the nest is run through the
   sequencer (tpu_seq_*) with the program before it: the immediates are drawn again inside the
   window that keeps every dynamic instance in its memory, and an instruction that still breaks
   a rule in some iteration (a check of docs/isa.md "Errors" or an undefined case of
   "Semantics") loses its registers, which gives back gen_valid's instruction. */

/* internal: 1 when the resolved instruction's result is undefined (docs/isa.md "Semantics":
   vop dst partly over a or b, a broadcast b row among the dst rows but the last; vred/softmax
   dst among the src rows, softmax in place excepted) */
static int undefined_case(const tpu_dinsn_t *d, unsigned n)
{
    if (d->opcode == TPU_OP_VOP) {
        uint64_t nr = d->n, dr = d->d_row, ar = d->a_row, br = d->b_row;
        int binary = tpu_vop_is_binary(d->vop);
        int part_a = d->d_mem == d->a_mem && dr != ar && dr < ar + nr && ar < dr + nr;
        int part_b = binary && !d->bcast && d->d_mem == d->b_mem && dr != br && dr < br + nr &&
                     br < dr + nr;
        int in_b = binary && d->bcast && d->d_mem == d->b_mem && dr <= br && br + 1u < dr + nr;
        return part_a || part_b || in_b;
    }
    if (d->opcode == TPU_OP_VRED || d->opcode == TPU_OP_SOFTMAX) {
        uint64_t c = (d->length + n - 1u) / n, g = d->n;
        uint64_t last = (g - 1u) * d->row_stride + (c - 1u) * d->chunk_stride;
        uint64_t dlast = d->opcode == TPU_OP_VRED ? (g + n - 1u) / n - 1u : last;
        uint64_t src = d->src_row, dst = d->dst_row;
        if (d->opcode == TPU_OP_SOFTMAX && softmax_chunks_alias(g, c, d->chunk_stride,
                                                                d->row_stride))
            return 1;
        return d->d_mem == d->src_mem && dst <= src + last && src <= dst + dlast &&
               !(d->opcode == TPU_OP_SOFTMAX && dst == src);
    }
    return 0;
}

/* per pc: the values each index register had at its dispatches */
struct xrange {
    int64_t lo[TPU_XREGS], hi[TPU_XREGS];
    uint32_t bits[TPU_XREGS]; /* OR of the values: alignment */
    unsigned seen;
};

struct simout {
    int code;      /* 0 halt; an error code; -1 an undefined case; -2 the dynamic limit */
    uint32_t pc;   /* where */
    uint64_t dyn;  /* dynamic instructions dispatched */
};

/* internal: run prog[0 .. cnt) as the sequencer dispatches it (the rest of IMEM is nop), every
   dynamic instruction checked as dispatched (codes 1 .. 5, 8, 10) and for the undefined cases;
   lenient: a failing instruction goes on as a nop (tpu-as --check), to gather xr. */
static void simulate(const struct gen *g, const tpu_insn_t *prog, size_t cnt, uint64_t limit,
                     int lenient, struct xrange *xr, struct simout *o)
{
    const tpu_core_geom_t *geo = &g->cfg->geom;
    tpu_seq_t sq;
    tpu_seq_reset(&sq);
    uint32_t pc = 0;
    int lw = 0;
    memset(o, 0, sizeof *o);
    o->code = -2;
    int first = 0;
    for (uint64_t dyn = 0; dyn < limit; dyn++) {
        if (pc >= cnt) {
            if (!first) {
                o->code = TPU_ERR_PC_END;
                o->pc = geo->imem_insns;
                o->dyn = dyn;
            }
            return;
        }
        tpu_dinsn_t d;
        tpu_insn_decode(prog[pc], &d);
        if (xr) {
            struct xrange *x = &xr[pc];
            for (unsigned r = 1; r < TPU_XREGS; r++) {
                int64_t v = (int32_t)tpu_seq_xval(&sq, r);
                if (!x->seen || v < x->lo[r])
                    x->lo[r] = v;
                if (!x->seen || v > x->hi[r])
                    x->hi[r] = v;
                x->bits[r] |= (uint32_t)v;
            }
            x->seen = 1;
        }
        tpu_seq_resolve(&sq, &d);
        int e = tpu_insn_check_board(&d, geo, g->self, g->cores ? g->cores : 1);
        if (e == 0 && d.opcode == TPU_OP_MATMUL && !lw)
            e = TPU_ERR_NO_LW;
        if (e == 0)
            e = tpu_seq_check(&sq, &d, pc, geo->imem_insns);
        if (e == 0 && undefined_case(&d, g->n))
            e = -1;
        if (e == 0 && d.opcode == TPU_OP_LW)
            lw = 1;
        if (e != 0 && !first) {
            first = 1;
            o->code = e;
            o->pc = pc;
            o->dyn = dyn;
            if (!lenient)
                return;
        }
        if (e != 0)
            d.opcode = TPU_OP_NOP;
        if (d.opcode == TPU_OP_HALT) {
            if (!first) {
                o->code = 0;
                o->pc = pc;
                o->dyn = dyn + 1;
            }
            return;
        }
        pc = tpu_seq_step(&sq, &d, pc);
    }
}

/* internal: the program so far, then `more`, then halt, in one array (malloc'd) */
static tpu_insn_t *prog_with(const struct gen *g, const tpu_insn_t *more, size_t nmore,
                             size_t *cnt)
{
    tpu_insn_t *p = malloc((g->nprog + nmore + 1u) * sizeof *p);
    if (p == NULL)
        return NULL;
    memcpy(p, g->prog, g->nprog * sizeof *p);
    memcpy(p + g->nprog, more, nmore * sizeof *p);
    tpu_dinsn_t h;
    memset(&h, 0, sizeof h);
    h.opcode = TPU_OP_HALT;
    p[g->nprog + nmore] = tpu_insn_encode(&h);
    *cnt = g->nprog + nmore + 1u;
    return p;
}

/* internal: the number of address operands (register slots) of an opcode */
static unsigned slots_of(const tpu_dinsn_t *d)
{
    switch (d->opcode) {
    case TPU_OP_DMA_IN: case TPU_OP_DMA_OUT: case TPU_OP_MATMUL:
    case TPU_OP_VRED: case TPU_OP_SOFTMAX:
        return 2;
    case TPU_OP_VOP: return 3;
    case TPU_OP_LW: case TPU_OP_SEND: case TPU_OP_RECV: case TPU_OP_BCAST: case TPU_OP_ALLREDUCE:
        return 1;
    default: return 0;
    }
}

/* internal: slot s of d: its immediate, the memory (3: host bytes) and the extent past the
   immediate that must stay inside it (rows, or bytes of host memory) */
static uint32_t *slot_ref(tpu_dinsn_t *d, unsigned s, unsigned n, unsigned *mem, uint64_t *ext)
{
    uint64_t c = d->length ? (d->length + n - 1u) / n : 1u, gg = d->n ? d->n : 1u;
    uint64_t last = (gg - 1u) * d->row_stride + (c - 1u) * d->chunk_stride;
    *ext = d->n;
    switch (d->opcode) {
    case TPU_OP_DMA_IN:
    case TPU_OP_DMA_OUT:
        if (s == 0) {
            *mem = 3;
            *ext = (uint64_t)(d->n - 1u) * d->stride + (uint64_t)d->cols * tpu_mem_elem_bytes(d->mem);
            return &d->addr;
        }
        *mem = d->mem;
        return (uint32_t *)&d->row;
    case TPU_OP_LW: *mem = TPU_MEM_WMEM; *ext = n; return (uint32_t *)&d->w_row;
    case TPU_OP_MATMUL:
        *mem = s ? TPU_MEM_ACC : TPU_MEM_UB;
        return s ? (uint32_t *)&d->acc_row : (uint32_t *)&d->ub_row;
    case TPU_OP_VOP:
        if (s == 0) { *mem = d->a_mem; return (uint32_t *)&d->a_row; }
        if (s == 1) { *mem = d->b_mem; *ext = d->bcast ? 1u : d->n; return (uint32_t *)&d->b_row; }
        *mem = d->d_mem;
        return (uint32_t *)&d->d_row;
    case TPU_OP_VRED:
    case TPU_OP_SOFTMAX:
        if (s == 0) { *mem = d->src_mem; *ext = last + 1u; return (uint32_t *)&d->src_row; }
        *mem = d->d_mem;
        *ext = d->opcode == TPU_OP_VRED ? (gg + n - 1u) / n : last + 1u;
        return (uint32_t *)&d->dst_row;
    default: /* send, recv, bcast, allreduce */
        *mem = d->opcode == TPU_OP_ALLREDUCE ? TPU_MEM_ACC : (d->mem & 1u);
        return (uint32_t *)&d->row;
    }
}

/* a loop of the tree being built */
#define NEST_NODES 12
#define NEST_ITEMS 6
#define NEST_ENTRIES 64
struct lnode {
    unsigned level, count;
    int hoist;              /* the child whose `loop` stands right after ours, or -1 */
    unsigned nitems;
    int item[NEST_ITEMS];   /* >= 0: a child loop; -1: an instruction of gen_valid's */
    unsigned entry, first, last; /* entry of its `loop`; its body's entries */
};

struct nest {
    struct gen *g;
    struct lnode node[NEST_NODES];
    unsigned nn;
    struct {
        int node;           /* >= 0: the `loop` of that node */
        tpu_insn_t raw, orig;
        int label;          /* a label to define before this entry, or -1 */
    } e[NEST_ENTRIES];
    unsigned ne;
    int bad;
};

/* internal: a loop count: 1 often, small, sometimes larger */
static unsigned loop_count(struct gen *g)
{
    switch (rnd(g) % 8) {
    case 0: case 1: return 1;
    case 2: case 3: case 4: return (unsigned)range(g, 2, 4);
    case 5: return (unsigned)range(g, 5, 16);
    case 6: return (unsigned)range(g, 17, 64);
    default: return (unsigned)range(g, 2, 8);
    }
}

static int tree_new(struct nest *ns, unsigned level, unsigned maxlevel)
{
    struct gen *g = ns->g;
    if (ns->nn == NEST_NODES)
        return -1;
    int k = (int)ns->nn++;
    struct lnode *nd = &ns->node[k];
    memset(nd, 0, sizeof *nd);
    nd->level = level;
    nd->count = loop_count(g);
    nd->hoist = -1;
    unsigned kids = level < maxlevel ? 1u + (chance(g, 3) ? 1u : 0u) : 0u;
    unsigned insns = (unsigned)range(g, kids ? 0 : 1, level == 0 ? 3 : 2);
    for (unsigned i = 0; i < kids + insns; i++)
        nd->item[i] = -1;
    nd->nitems = kids + insns;
    for (unsigned c = 0; c < kids; c++) {
        int child = tree_new(ns, level + 1u, maxlevel);
        if (child < 0)
            continue;
        /* a random free place among the items */
        unsigned at;
        do
            at = (unsigned)range(g, 0, nd->nitems - 1u);
        while (ns->node[k].item[at] >= 0);
        ns->node[k].item[at] = child;
    }
    nd = &ns->node[k];
    /* an only child loop is hoisted (armed once before our body) one time in two */
    unsigned nk = 0;
    int only = -1;
    for (unsigned i = 0; i < nd->nitems; i++)
        if (nd->item[i] >= 0)
            nk++, only = nd->item[i];
    if (nk == 1 && chance(g, 2))
        nd->hoist = only;
    return k;
}

/* internal: dynamic instructions of node k (an instruction may be two: lw, matmul) */
static uint64_t tree_dyn(const struct nest *ns, int k)
{
    const struct lnode *nd = &ns->node[k];
    uint64_t body = 0;
    for (unsigned i = 0; i < nd->nitems; i++)
        body += nd->item[i] < 0 ? 2u
                : tree_dyn(ns, nd->item[i]) + (nd->hoist == nd->item[i] ? 0u : 1u);
    return nd->count * body;
}

static void nest_add(struct nest *ns, int node, tpu_insn_t raw)
{
    if (ns->ne == NEST_ENTRIES) {
        ns->bad = 1;
        return;
    }
    ns->e[ns->ne].node = node;
    ns->e[ns->ne].raw = ns->e[ns->ne].orig = raw;
    ns->e[ns->ne].label = -1;
    ns->ne++;
}

static void emit_head(struct nest *ns, int k)
{
    tpu_insn_t none = { { 0, 0, 0, 0 } };
    ns->node[k].entry = ns->ne;
    nest_add(ns, k, none); /* the `loop`, encoded when its body is known */
    if (ns->node[k].hoist >= 0)
        emit_head(ns, ns->node[k].hoist);
}

static void emit_body(struct nest *ns, int k)
{
    struct gen *g = ns->g;
    unsigned first = ns->ne;
    for (unsigned i = 0; i < ns->node[k].nitems && !ns->bad; i++) {
        int it = ns->node[k].item[i];
        if (it >= 0) {
            if (ns->node[k].hoist != it)
                emit_head(ns, it);
            emit_body(ns, it);
            continue;
        }
        /* gen_valid's instruction(s), taken back out of the program */
        size_t len = g->len, np = g->nprog, ni = g->insns;
        g->depth = ns->node[k].level + 1u; /* the levels 0 .. level enclose it */
        gen_valid(g, 1);
        g->depth = 0;
        for (size_t j = np; j < g->nprog; j++)
            nest_add(ns, -1, g->prog[j]);
        g->len = len;
        g->nprog = np;
        g->insns = ni;
        if (g->text)
            g->text[len] = 0;
    }
    ns->node[k].first = first;
    ns->node[k].last = ns->ne - 1u;
}

/* internal: a stride value for a register: rows (small, N-sized) or host bytes (multiples of 4) */
static int32_t stride_value(struct gen *g, int bytes)
{
    int32_t v;
    if (chance(g, 4))
        return 0;
    if (bytes) {
        static const int32_t b[] = { 4, 8, 64, 256, 4096 };
        v = b[rnd(g) % 5];
        if (chance(g, 2))
            v = 4 * (int32_t)range(g, 1, 64);
    } else {
        switch (rnd(g) % 4) {
        case 0: v = 1; break;
        case 1: v = (int32_t)g->n; break;
        case 2: v = (int32_t)range(g, 2, 8); break;
        default: v = (int32_t)range(g, 1, 40); break;
        }
    }
    return chance(g, 3) ? -v : v;
}

/* internal: draw slot s of entry i again inside the window that keeps every dispatch of it in
   its memory; 0 when no immediate fits (the caller drops the register). modk: the register's
   modulus k (0: none): every dispatch is then (immediate + x) mod 2^k, inside the memory for
   any immediate when 2^k - 1 + the extent fits, so the immediate is drawn from the whole
   field (the sums wrap) */
static int redraw_slot(struct gen *g, tpu_dinsn_t *d, unsigned s, const struct xrange *x,
                       uint32_t *again, int *have_again, unsigned modk)
{
    unsigned mem;
    uint64_t ext;
    uint32_t *f = slot_ref(d, s, g->n, &mem, &ext);
    unsigned r = d->xsel[s];
    if (!x->seen)
        return 0;
    int64_t size = mem == 3 ? (int64_t)g->cfg->host_bytes : (int64_t)g->rows[mem];
    if (modk) {
        int64_t m = (int64_t)1 << modk;
        unsigned e = mem == 3 ? tpu_mem_elem_bytes(d->mem) : 1u;
        if (ext == 0 || m - 1 + (int64_t)ext > size || (mem == 3 && (m < (int64_t)e ||
                                                                     (x->bits[r] & (e - 1u)))))
            return 0;
        if (*have_again) { /* in place: the same row as the operand before it */
            *f = *again;
            return 1;
        }
        if (mrnd(g) % 3 != 0) /* else the immediate gen_valid drew */
            *f = mem == 3 ? (uint32_t)mrnd(g) & ~(e - 1u) : (uint32_t)(mrnd(g) % 65536u);
        if (mem == 3 && (*f & (e - 1u)))
            *f &= ~(e - 1u);
        return 1;
    }
    int64_t lo = -x->lo[r], hi = size - (int64_t)ext - x->hi[r];
    if (mem == 3) { /* host addresses: aligned in every iteration */
        unsigned e = tpu_mem_elem_bytes(d->mem);
        if (x->bits[r] & (e - 1u))
            return 0;
        lo = (lo + e - 1) / (int64_t)e * e;
        hi = hi < 0 ? -1 : hi / (int64_t)e * e;
        if (lo < 0)
            lo = 0;
    } else if (hi > 65535) {
        hi = 65535;
    }
    if (lo < 0)
        lo = 0;
    if (ext == 0 || lo > hi)
        return 0;
    if (*have_again && (int64_t)*again >= lo && (int64_t)*again <= hi) {
        *f = *again; /* in place: the same row as the operand before it */
        return 1;
    }
    int64_t v = *f;
    if (v < lo || v > hi || chance(g, 2)) {
        switch (rnd(g) % 4) {
        case 0: v = lo; break;
        case 1: v = hi; break;
        default: v = lo + (int64_t)(rnd(g) % (uint64_t)(hi - lo + 1)); break;
        }
        if (mem == 3)
            v &= ~(int64_t)(tpu_mem_elem_bytes(d->mem) - 1u);
    }
    *f = (uint32_t)v;
    return 1;
}

/* internal: the text of an instruction with registers (the disassembly prints +xR) */
static void put_dis(struct gen *g, tpu_insn_t raw)
{
    char dis[192];
    tpu_insn_disasm(raw, dis, sizeof dis);
    put_raw(g, raw, "%s", dis);
}

/* internal: a loop nest at the end of the program, at most `room` instructions; 0, or -1
   when none fits (nothing written) */
static int gen_nest(struct gen *g, unsigned room)
{
    struct nest *ns = calloc(1, sizeof *ns);
    if (ns == NULL) {
        g->oom = 1;
        return -1;
    }
    ns->g = g;
    int lw0 = g->have_lw;
    /* depth 1 .. 6: single loops and deep nests both often */
    static const unsigned depths[] = { 0, 0, 0, 1, 1, 2, 3, 4, 5, 5 };
    unsigned maxlevel = depths[rnd(g) % 10];
    int root = tree_new(ns, 0, maxlevel);
    /* at most ~300 dynamic instructions per nest: the largest counts shrink */
    while (tree_dyn(ns, root) > 300) {
        unsigned big = 0;
        for (unsigned k = 1; k < ns->nn; k++)
            if (ns->node[k].count > ns->node[big].count)
                big = k;
        ns->node[big].count = (ns->node[big].count + 1u) / 2u;
        if (ns->node[big].count == 1 && tree_dyn(ns, root) > 300) {
            int one = 1;
            for (unsigned k = 0; k < ns->nn; k++)
                one &= ns->node[k].count == 1;
            if (one)
                break;
        }
    }
    /* emission: strides, then the nest (heads and bodies) */
    size_t len0 = g->len, np0 = g->nprog, ni0 = g->insns;
    emit_head(ns, root);
    emit_body(ns, root);
    if (ns->bad || ns->ne > room || g->oom) {
        g->len = len0;
        g->nprog = np0;
        g->insns = ni0;
        if (g->text)
            g->text[len0] = 0;
        g->have_lw = lw0;
        free(ns);
        return -1;
    }
    for (unsigned k = 0; k < ns->nn; k++) {
        struct lnode *nd = &ns->node[k];
        tpu_dinsn_t d;
        memset(&d, 0, sizeof d);
        d.opcode = TPU_OP_LOOP;
        d.level = nd->level;
        d.flags = nd->level;
        d.n = nd->count;
        d.skip = nd->first - nd->entry;
        d.body = nd->last - nd->first + 1u;
        ns->e[nd->entry].raw = ns->e[nd->entry].orig = tpu_insn_encode(&d);
    }
    /* registers on the address operands: one operand in two */
    for (unsigned i = 0; i < ns->ne; i++) {
        if (ns->e[i].node >= 0)
            continue;
        tpu_dinsn_t d;
        tpu_insn_decode(ns->e[i].raw, &d);
        unsigned sl = slots_of(&d);
        for (unsigned s = 0; s < sl; s++) {
            if (d.opcode == TPU_OP_VOP && s == 1 && !tpu_vop_is_binary(d.vop))
                continue;
            if (chance(g, 2))
                d.xsel[s] = 1u + (unsigned)(rnd(g) % (TPU_XREGS - 1u));
        }
        /* dst on a's register one time in two (in place, or a fixed distance) */
        if (d.opcode == TPU_OP_VOP && d.xsel[0] && chance(g, 2))
            d.xsel[2] = d.xsel[0];
        ns->e[i].raw = tpu_insn_encode(&d);
    }
    /* the registers' strides: which registers this nest sets, each row-like or byte-like */
    int set[TPU_XREGS] = { 0 }, set3[TPU_XREGS] = { 0 };
    int32_t st[TPU_XREGS][TPU_LOOP_LEVELS];
    unsigned nstride = 0;
    memset(st, 0, sizeof st);
    int used[TPU_XREGS] = { 0 };
    for (unsigned i = 0; i < ns->ne; i++) {
        tpu_dinsn_t d;
        tpu_insn_decode(ns->e[i].raw, &d);
        if (ns->e[i].node < 0)
            for (unsigned s = 0; s < 3; s++)
                used[d.xsel[s]] = 1;
    }
    /* the registers used: set five times in six (else the strides of an earlier nest stay);
       the others one time in four */
    for (unsigned r = 1; r < TPU_XREGS; r++) {
        if (used[r] ? !chance(g, 6) : chance(g, 4)) {
            int bytes = chance(g, 4);
            for (unsigned l = 0; l < TPU_LOOP_LEVELS; l++)
                st[r][l] = stride_value(g, bytes);
            set[r] = 1;
            set3[r] = maxlevel >= TPU_STRIDE_GROUP_LEVELS || chance(g, 4);
            nstride += 1u + (unsigned)set3[r];
        }
    }
    /* the registers' moduli (docs/isa.md "Loops", the modulus form; drawn from its own
       stream): a register this nest uses takes one one time in four, of a size that keeps
       every operand on it inside its memory whatever the immediate (small ones often, so
       that the sums wrap); a modulus left by an earlier nest is kept, or cleared (mod=0),
       always when it is too large for this nest's operands */
    unsigned modk[TPU_XREGS];
    int modset[TPU_XREGS] = { 0 };
    memcpy(modk, g->modk, sizeof modk);
    for (unsigned r = 1; r < TPU_XREGS; r++) {
        unsigned kmax = TPU_STRIDE_MOD_K_MAX, kmin = 1;
        for (unsigned i = 0; i < ns->ne && used[r]; i++) {
            tpu_dinsn_t d;
            tpu_insn_decode(ns->e[i].raw, &d);
            for (unsigned sl = 0; sl < 3 && ns->e[i].node < 0; sl++) {
                if (d.xsel[sl] != r)
                    continue;
                unsigned mem;
                uint64_t ext;
                slot_ref(&d, sl, g->n, &mem, &ext);
                uint64_t size = mem == 3 ? g->cfg->host_bytes : g->rows[mem];
                unsigned k = 0;
                while (k < kmax && ((uint64_t)1 << (k + 1)) - 1u + ext <= size)
                    k++;
                kmax = k;
                if (mem == 3 && tpu_mem_elem_bytes(d.mem) == 4)
                    kmin = 2; /* the mask keeps an ACC address's alignment */
            }
        }
        if (!used[r]) {
            if (g->modk[r] && mrnd(g) % 4 == 0)
                modk[r] = 0, modset[r] = 1;
        } else if (kmax >= kmin && mrnd(g) % 4 == 0) {
            unsigned hi = mrnd(g) % 2 ? (kmax < kmin + 3u ? kmax : kmin + 3u) : kmax;
            modk[r] = kmin + (unsigned)(mrnd(g) % (hi - kmin + 1u));
            modset[r] = 1;
        } else if (g->modk[r] && (g->modk[r] > kmax || g->modk[r] < kmin || mrnd(g) % 2)) {
            modk[r] = 0;
            modset[r] = 1;
        }
        nstride += (unsigned)modset[r];
    }
    if (nstride + ns->ne > room) {
        g->len = len0;
        g->nprog = np0;
        g->insns = ni0;
        if (g->text)
            g->text[len0] = 0;
        g->have_lw = lw0;
        free(ns);
        return -1;
    }
    uint32_t base = (uint32_t)(g->nprog + nstride); /* pc of entry 0 */
    /* the strides as instructions */
    tpu_insn_t all[NEST_ENTRIES + 3 * TPU_XREGS];
    unsigned na = 0;
    for (unsigned r = 1; r < TPU_XREGS; r++) {
        tpu_dinsn_t d;
        memset(&d, 0, sizeof d);
        d.opcode = TPU_OP_STRIDE;
        d.xreg = r;
        if (set[r]) {
            d.flags = r;
            for (unsigned l = 0; l < 3; l++)
                d.s[l] = st[r][l];
            all[na++] = tpu_insn_encode(&d);
        }
        if (set3[r]) {
            d.group = 1;
            d.flags = r | 8u;
            for (unsigned l = 0; l < 3; l++)
                d.s[l] = st[r][TPU_STRIDE_GROUP_LEVELS + l];
            all[na++] = tpu_insn_encode(&d);
        }
        if (modset[r]) {
            memset(&d, 0, sizeof d);
            d.opcode = TPU_OP_STRIDE;
            d.xreg = r;
            d.modform = 1;
            d.modk = modk[r];
            all[na++] = tpu_insn_encode(&d);
        }
    }
    /* gather each register's values at each instruction, draw the immediates in their windows */
    size_t cnt = 0;
    struct simout so;
    for (unsigned i = 0; i < ns->ne; i++)
        all[na + i] = ns->e[i].raw;
    tpu_insn_t *p = prog_with(g, all, na + ns->ne, &cnt);
    struct xrange *xr = p ? calloc(cnt, sizeof *xr) : NULL;
    int ok = p != NULL && xr != NULL;
    if (ok) {
        simulate(g, p, cnt, 2000000, 1, xr, &so);
        for (unsigned i = 0; i < ns->ne; i++) {
            if (ns->e[i].node >= 0)
                continue;
            tpu_dinsn_t d;
            tpu_insn_decode(ns->e[i].raw, &d);
            uint32_t again = 0;
            int have_again = 0;
            unsigned amem = 0;
            for (unsigned s = 0; s < 3; s++) {
                if (!d.xsel[s])
                    continue;
                unsigned mem;
                uint64_t ext;
                uint32_t *f = slot_ref(&d, s, g->n, &mem, &ext);
                uint32_t old = *f;
                /* vop dst on a's register, a's memory: in place one time in two */
                have_again = d.opcode == TPU_OP_VOP && s == 2 && d.xsel[2] == d.xsel[0] &&
                             mem == amem && chance(g, 2);
                if (!redraw_slot(g, &d, s, &xr[base + i], &again, &have_again,
                                 modk[d.xsel[s]])) {
                    *f = old;
                    d.xsel[s] = 0;
                }
                if (s == 0) {
                    again = *f;
                    amem = mem;
                }
            }
            ns->e[i].raw = tpu_insn_encode(&d);
            p[base + i] = ns->e[i].raw;
        }
        /* every dispatch checked: an instruction that still breaks a rule loses its registers */
        for (unsigned tries = 0; tries <= ns->ne; tries++) {
            simulate(g, p, cnt, 2000000, 0, NULL, &so);
            if (so.code == 0)
                break;
            if (so.code == -2 || so.pc < base || so.pc >= base + ns->ne ||
                ns->e[so.pc - base].node >= 0) {
                ok = 0;
                break;
            }
            unsigned i = so.pc - base;
            if (memcmp(&ns->e[i].raw, &ns->e[i].orig, sizeof ns->e[i].raw) == 0) {
                ok = 0; /* gen_valid's own instruction fails: not expected */
                break;
            }
            ns->e[i].raw = p[so.pc] = ns->e[i].orig;
        }
        ok = ok && so.code == 0;
    }
    free(p);
    free(xr);
    if (!ok) {
        g->len = len0;
        g->nprog = np0;
        g->insns = ni0;
        if (g->text)
            g->text[len0] = 0;
        g->have_lw = lw0;
        free(ns);
        return -1;
    }
    memcpy(g->modk, modk, sizeof g->modk); /* the moduli from here on */
    /* the text: strides, then the loops (by labels one time in two) and the bodies */
    unsigned ndepth = 0;
    for (unsigned k = 0; k < ns->nn; k++)
        ndepth = ns->node[k].level + 1u > ndepth ? ns->node[k].level + 1u : ndepth;
    put(g, "# a loop nest: %u loops, %u levels, %llu dynamic instructions", ns->nn, ndepth,
        (unsigned long long)tree_dyn(ns, root));
    for (unsigned i = 0; i < na; i++)
        put_dis(g, all[i]);
    int lab[NEST_NODES];
    for (unsigned k = 0; k < ns->nn; k++)
        lab[k] = chance(g, 2) ? (int)g->labels++ : -1;
    for (unsigned i = 0; i < ns->ne; i++) {
        for (unsigned k = 0; k < ns->nn; k++) {
            if (lab[k] >= 0 && ns->node[k].first == i)
                put_label(g, "B%d:", lab[k]);
            if (lab[k] >= 0 && ns->node[k].last == i)
                put_label(g, "E%d:", lab[k]);
        }
        int k = ns->e[i].node;
        if (k < 0) {
            put_dis(g, ns->e[i].raw);
            continue;
        }
        const struct lnode *nd = &ns->node[k];
        if (lab[k] >= 0)
            put_raw(g, ns->e[i].raw, "loop %u count=%u skip=B%d-. body=E%d-B%d+1", nd->level,
                    nd->count, lab[k], lab[k], lab[k]);
        else if (nd->first == i + 1u && chance(g, 2))
            put_raw(g, ns->e[i].raw, "loop %u count=%u body=%u", nd->level, nd->count,
                    nd->last - nd->first + 1u);
        else
            put_raw(g, ns->e[i].raw, "loop %u count=%u skip=%u body=%u", nd->level, nd->count,
                    nd->first - i, nd->last - nd->first + 1u);
    }
    free(ns);
    return 0;
}

/* internal: 1 .. kmax, the largest k with 2^k - 1 + ext <= size (at most 16), or 0 */
static unsigned fit_k(uint64_t size, uint64_t ext)
{
    unsigned k = 0;
    while (k < TPU_STRIDE_MOD_K_MAX && ((uint64_t)1 << (k + 1)) - 1u + ext <= size)
        k++;
    return k;
}

/* internal: a ring of WMEM tiles (docs/isa.md "Loops", "Why modulo registers"), as the
   compiler's loop pass streams weights: a loop whose dma_in wmem and lw address the slot
   through a register with a modulus (rows (I + t s) mod 2^k, wrapping after a few
   iterations), the tiles' host addresses through a second register, with a modulus one time
   in two (the host address wraps too), a matmul after the lw one time in two, its UB rows
   through a third register with a modulus and a stride of either sign (a row operand that
   wraps, below 0 too); the ring's modulus cleared after it (mod=0) one time in two. Drawn
   from the modulus form's stream; 0, or -1 when it does not fit in `room` (nothing
   written) */
static int gen_ring(struct gen *g, unsigned room)
{
    unsigned n = g->n, kr = fit_k(g->rows[TPU_MEM_WMEM], n);
    if (room < 12 || kr == 0)
        return -1;
    size_t len0 = g->len, np0 = g->nprog, ni0 = g->insns;
    int lw0 = g->have_lw;
    unsigned mk0[TPU_XREGS];
    memcpy(mk0, g->modk, sizeof mk0);
    /* three distinct registers: the ring's rows, the host address, the matmul's UB rows */
    unsigned xr[3];
    for (unsigned i = 0; i < 3; i++) {
        int dup;
        do {
            xr[i] = 1u + (unsigned)(mrnd(g) % (TPU_XREGS - 1u));
            dup = 0;
            for (unsigned j = 0; j < i; j++)
                dup |= xr[j] == xr[i];
        } while (dup);
    }
    unsigned k = mrnd(g) % 2 ? kr : 1u + (unsigned)(mrnd(g) % kr), ring = 1u << k;
    int32_t sr = mrnd(g) % 3 ? (int32_t)n : 1 + (int32_t)(mrnd(g) % ring); /* a tile, or any */
    if (mrnd(g) % 4 == 0)
        sr = -sr;
    unsigned slots = ring / (unsigned)(sr < 0 ? -sr : sr);
    unsigned cnt = slots + 1u + (unsigned)(mrnd(g) % 4); /* past the ring's end: wraps */
    cnt = cnt > 64u ? 64u : cnt < 2u ? 2u : cnt;
    unsigned imm = (unsigned)(mrnd(g) % 65536u); /* any: the sum is masked */
    /* the tiles in host memory: n rows of `cols` bf16, packed */
    unsigned cols = 1u + (unsigned)(mrnd(g) % n), rowb = 2u * cols;
    uint64_t span = (uint64_t)n * rowb, host = g->cfg->host_bytes;
    unsigned ka = fit_k(host, span);
    int amod = ka >= 2 && mrnd(g) % 2;
    int32_t sa = (int32_t)span * (mrnd(g) % 2 ? 1 : (int32_t)(1u + mrnd(g) % 4u));
    uint32_t aimm;
    if (amod) {
        ka = ka > 12u ? 8u + (unsigned)(mrnd(g) % (ka - 7u)) : ka; /* 256 B .. */
        aimm = (uint32_t)mrnd(g) & ~1u;
    } else { /* no modulus: every tile inside the host memory */
        uint64_t last = (uint64_t)(cnt - 1u) * (uint32_t)sa + span;
        if (last > host)
            sa = 0, last = span;
        aimm = (uint32_t)(2u * (mrnd(g) % ((host - last) / 2u + 1u)));
    }
    int mm = mrnd(g) % 2 && g->rows[TPU_MEM_UB] >= 1u && g->rows[TPU_MEM_ACC] >= 1u;
    unsigned m = 1u + (unsigned)(mrnd(g) % (n < 8u ? n : 8u));
    unsigned ku = fit_k(g->rows[TPU_MEM_UB], m);
    int32_t su = 1 + (int32_t)(mrnd(g) % 8u);
    if (mrnd(g) % 2)
        su = -su;
    unsigned kub = ku ? 1u + (unsigned)(mrnd(g) % (ku < 6u ? ku : 6u)) : 0u;
    unsigned acc = (unsigned)(mrnd(g) % (g->rows[TPU_MEM_ACC] - m + 1u));
    put(g, "# a ring of %u WMEM rows (mod=%u), %u loads of %u rows, stride %d", ring, ring, cnt,
        n, (int)sr);
    put(g, "stride x%u l0=%d l1=0 l2=0", xr[0], (int)sr);
    put_mod(g, xr[0], k);
    put(g, "stride x%u l0=%d l1=0 l2=0", xr[1], (int)sa);
    put_mod(g, xr[1], amod ? ka : 0u);
    if (mm && kub) {
        put(g, "stride x%u l0=%d l1=0 l2=0", xr[2], (int)su);
        put_mod(g, xr[2], kub);
    }
    put(g, "loop 0 count=%u body=%u", cnt, mm ? 3u : 2u);
    put(g, "dma_in wmem row=%u+x%u rows=%u cols=%u addr=0x%x+x%u stride=%u", imm, xr[0], n, cols,
        (unsigned)aimm, xr[1], rowb);
    put(g, "lw w=%u+x%u%s", imm, xr[0], lw_flag(g));
    g->have_lw = 1;
    if (mm) {
        if (kub)
            put(g, "matmul ub=%u+x%u acc=%u rows=%u%s", (unsigned)(mrnd(g) % 65536u), xr[2], acc,
                m, mrnd(g) % 2 ? " accumulate" : "");
        else
            put(g, "matmul ub=0 acc=%u rows=%u", acc, m);
    }
    if (mrnd(g) % 2)
        put_mod(g, xr[0], 0); /* the ring's modulus cleared: k = 0 */
    /* checked: the program so far runs to its end (every dispatch of the ring in range) */
    size_t cntp = 0;
    struct simout so;
    tpu_insn_t none[1] = { { { 0, 0, 0, 0 } } };
    tpu_insn_t *p = prog_with(g, none, 0, &cntp);
    int ok = p != NULL && g->insns - ni0 <= room && !g->oom;
    if (ok) {
        simulate(g, p, cntp, 2000000, 0, NULL, &so);
        ok = so.code == 0;
    }
    free(p);
    if (!ok) {
        g->len = len0;
        g->nprog = np0;
        g->insns = ni0;
        if (g->text)
            g->text[len0] = 0;
        g->have_lw = lw0;
        memcpy(g->modk, mk0, sizeof mk0);
        return -1;
    }
    return 0;
}

/* internal: one item of a program: a loop nest (when loops are on, one in four, if it fits in
   `room` instructions; one in sixteen of the rest a ring of WMEM tiles on modulo registers),
   else gen_valid's instruction */
static void gen_item(struct gen *g, unsigned room)
{
    if (g->loops && room >= 2 && chance(g, 4) && gen_nest(g, room) == 0)
        return;
    if (g->loops && mrnd(g) % 16 == 0 && gen_ring(g, room) == 0)
        return;
    gen_valid(g, 1);
}

/* internal: the documented malformed loops (docs/isa.md "Loops", "Errors"): code 3 (a loop
   with count, skip or body 0), 10 (a bad nest) or 2 (a stride that takes an operand out of its
   memory in a later iteration); sets *pc to the instruction the core must stop at */
static void gen_bad_loop(struct gen *g, int code, uint32_t *pc)
{
    unsigned imem = g->cfg->geom.imem_insns;
    if (code == TPU_ERR_COUNT) {
        unsigned level = (unsigned)range(g, 0, TPU_LOOP_LEVELS - 1);
        if (chance(g, 3)) { /* inside a running loop's body: its first dispatch */
            put(g, "loop 0 count=%u skip=1 body=2", (unsigned)range(g, 2, 4));
            put(g, "nop");
            level = (unsigned)range(g, 1, TPU_LOOP_LEVELS - 1);
        }
        *pc = (uint32_t)g->insns;
        switch (rnd(g) % 3) {
        case 0: put(g, "loop %u count=0 skip=1 body=1", level); break;
        case 1: put(g, "loop %u count=%u skip=0 body=1", level, (unsigned)range(g, 1, 9)); break;
        default: put(g, "loop %u count=%u skip=1 body=0", level, (unsigned)range(g, 1, 9)); break;
        }
        put(g, "nop");
        return;
    }
    if (code == TPU_ERR_LOOP) {
        switch (rnd(g) % 4) {
        case 0: /* an inner level with no armed outer level holding it */
            *pc = (uint32_t)g->insns;
            put(g, "loop %u count=2 skip=1 body=1", (unsigned)range(g, 1, TPU_LOOP_LEVELS - 1));
            put(g, "nop");
            break;
        case 1: /* a body past the end of IMEM */
            *pc = (uint32_t)g->insns;
            put(g, "loop 0 count=2 skip=1 body=%u", imem - (unsigned)g->insns);
            put(g, "nop");
            break;
        case 2: /* re-arming a running level from inside its body */
            put(g, "loop 0 count=%u skip=1 body=2", (unsigned)range(g, 2, 3));
            put(g, "nop");
            *pc = (uint32_t)g->insns;
            put(g, "loop 0 count=1 skip=1 body=1");
            put(g, "nop");
            break;
        default: /* an inner body that ends past its outer body */
            put(g, "loop 0 count=2 skip=1 body=2");
            *pc = (uint32_t)g->insns;
            put(g, "loop 1 count=2 skip=1 body=%u", (unsigned)range(g, 2, 4));
            put(g, "nop");
            put(g, "nop");
            put(g, "nop");
            break;
        }
        return;
    }
    /* code 2: the first dispatches in range, iteration j+1 out (past the end or below 0) */
    unsigned kind = (unsigned)(rnd(g) % 3), r = 1u + (unsigned)(rnd(g) % (TPU_XREGS - 1u));
    unsigned mem = kind == 0 ? TPU_MEM_WMEM : kind == 1 ? TPU_MEM_UB : TPU_MEM_ACC;
    unsigned ext = kind == 0 ? g->n : (unsigned)count(g, cap_rows(g, mem, 4));
    unsigned rows = g->rows[mem] - ext; /* the last first row that fits */
    unsigned j = (unsigned)range(g, 0, 3);
    int64_t s = (int64_t)range(g, 1, 8), w;
    if (chance(g, 2) && (uint64_t)j * s + (uint64_t)s - 1u <= rows) {
        w = (int64_t)rows - (int64_t)j * s - (int64_t)range(g, 0, (uint64_t)s - 1u);
    } else { /* below 0 */
        if ((uint64_t)j * s + (uint64_t)s - 1u > rows) {
            j = 0;
            s = 1;
        }
        w = (int64_t)j * s + (int64_t)range(g, 0, (uint64_t)s - 1u);
        if (w > rows)
            w = rows;
        s = -s;
    }
    if (g->modk[r]) /* a modulus of an earlier nest: none again (exact rows) */
        put_mod(g, r, 0);
    put(g, "stride x%u l0=%lld l1=0 l2=0", r, (long long)s);
    put(g, "loop 0 count=%u body=1", j + 2u + (unsigned)range(g, 0, 2));
    *pc = (uint32_t)g->insns;
    switch (kind) {
    case 0: put(g, "lw w=%lld+x%u%s", (long long)w, r, lw_flag(g)); break;
    case 1:
        put(g, "dma_in ub row=%lld+x%u rows=%u cols=1 addr=0x1000 stride=2", (long long)w, r, ext);
        break;
    default:
        put(g, "vop relu a=acc:%lld+x%u dst=acc:%lld+x%u rows=%u", (long long)w, r, (long long)w,
            r, ext);
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
    if (!cfg_ok(cfg) || cfg->want_error < -1 || cfg->want_error > 10 || cfg->want_error == 9)
        return -1;
    struct gen g;
    memset(&g, 0, sizeof g);
    /* the seed hashed: seed * G + c would make seed s+1's stream seed s's shifted by one draw
       (splitmix64 adds G per draw), and neighbouring seeds near copies of each other */
    uint64_t h = cfg->seed ^ 0x5EED5EED5EED5EEDull;
    g.st = tpu_matgen_rand(&h);
    g.tst = g.st ^ 0x7A4E5B05E0000000ull;
    g.ast = g.st ^ 0xACCF125700000000ull;
    g.mst = g.st ^ 0x3D0C3D0C00000000ull;
    g.cfg = cfg;
    g.n = geo->n;
    g.rows[0] = geo->ub_rows;
    g.rows[1] = geo->acc_rows;
    g.rows[2] = geo->wmem_rows;
    unsigned maxi = cfg->max_insns ? cfg->max_insns : 48u;
    if (maxi > geo->imem_insns - 8u) /* the prologue (at most 6) and the halt */
        maxi = geo->imem_insns - 8u;
    g.loops = !cfg->no_loops;
    g.cores = 1;
    int code = cfg->want_error, loop_form = cfg->loop_error;
    if (code < 0) {
        if (rnd(&g) % 3 == 0) { /* 1 .. 8 or 10 (a malformed loop) */
            code = (int)range(&g, 1, 9);
            code = code == 9 ? TPU_ERR_LOOP : code;
        } else {
            code = 0;
        }
        loop_form = g.loops && chance(&g, 2);
    }
    loop_form = (loop_form && (code == TPU_ERR_ROW || code == TPU_ERR_COUNT)) ||
                code == TPU_ERR_LOOP;
    /* each instruction generates at most two (an lw before a matmul); a loop nest is one item
       of as many instructions as there is room for */
    unsigned k = (unsigned)range(&g, 1, maxi / 2 ? maxi / 2 : 1);
    unsigned bad_at = code ? (unsigned)range(&g, 0, k - 1) : k;
    put(&g, "# tpu-mkprog random --mxu %u --seed %llu: %u items, expect %s %d", g.n,
        (unsigned long long)cfg->seed, k, code ? "error" : "done", code);
    out->expect_code = code;
    /* every row of UB, ACC and WMEM written first (stride 0: the same words from the input in
       each), so that no instruction reads a never-written row: the results are defined, and
       the same on the RTL, whose memories start random (X-initialisation) */
    prologue(&g);
    size_t body0 = g.insns;
    /* a malformed loop takes up to 6 instructions */
    unsigned reserve = loop_form ? 6u : 2u;
    for (unsigned i = 0; i < k && !g.oom; i++) {
        if (code != 0 && code != TPU_ERR_PC_END && i == bad_at) {
            out->expect_pc = (uint32_t)g.insns;
            if (loop_form)
                gen_bad_loop(&g, code, &out->expect_pc);
            else
                gen_bad(&g, code);
            continue;
        }
        /* an error-5 program has no lw before its bad matmul */
        if (code == TPU_ERR_NO_LW && i < bad_at) {
            gen_valid(&g, 0);
            continue;
        }
        size_t used = g.insns - body0, after = 2u * (k - i - 1u) + (i < bad_at ? reserve : 0u);
        gen_item(&g, used + after < maxi ? (unsigned)(maxi - used - after) : 0u);
    }
    if (code == TPU_ERR_PC_END)
        out->expect_pc = geo->imem_insns; /* no halt: the rest of IMEM is nop */
    else
        put(&g, "halt");
    if (g.oom || g.insns > geo->imem_insns) {
        free(g.prog);
        free(g.text);
        return -1;
    }
    /* the second opinion: the program run through the sequencer, every dynamic instruction
       checked as dispatched, ends as constructed (error 7 is the AXI's: the checks see done) */
    struct simout so;
    simulate(&g, g.prog, g.nprog, 100000000u, 0, NULL, &so);
    free(g.prog);
    int want = code == TPU_ERR_AXI ? 0 : code;
    uint32_t want_pc = code == TPU_ERR_AXI ? so.pc : out->expect_pc;
    if (so.code != want || (want && so.pc != want_pc)) {
        free(g.text);
        return -1; /* the generator and the checks disagree: a bug in one of them */
    }
    out->text = g.text;
    out->insns = g.insns;
    out->in_addr = 0x1000;
    out->in_bytes = 4096;
    return 0;
}

/* ---- Board rounds in loops ---- */
static const char *xtext(unsigned lc, unsigned xr)
{
    static const char *const xn[] = { "", "+x1", "+x2", "+x3", "+x4", "+x5", "+x6", "+x7",
                                      "+x8", "+x9", "+x10", "+x11", "+x12", "+x13", "+x14",
                                      "+x15" };
    return lc && xr < TPU_XREGS ? xn[xr] : "";
}

/* internal: the first row and the stride of a collective repeated lc times (0: not in a loop)
   on nn rows of a memory of `rows`: every iteration inside the memory, the ends often */
static void coll_window(struct gen *g, unsigned rows, unsigned nn, unsigned lc, unsigned *row,
                        int32_t *st)
{
    unsigned span = rows - nn;
    int32_t s = 0;
    if (lc > 1) {
        unsigned smax = span / (lc - 1u);
        s = (int32_t)range(g, 0, smax < 64u ? smax : 64u);
        if (chance(g, 3))
            s = -s;
    }
    uint64_t ext = (uint64_t)(lc ? lc - 1u : 0u) * (uint64_t)(s < 0 ? -(int64_t)s : s);
    uint64_t lo = s < 0 ? ext : 0, hi = span - (s > 0 ? ext : 0);
    switch (rnd(g) % 4) {
    case 0: *row = (unsigned)lo; break;
    case 1: *row = (unsigned)hi; break;
    default: *row = (unsigned)range(g, lo, hi); break;
    }
    *st = s;
}

static void coll_loop(struct gen *g, unsigned lc, unsigned xr, int32_t s)
{
    if (!lc)
        return;
    if (g->modk[xr]) /* a modulus of an earlier nest: none again (the window is exact) */
        put_mod(g, xr, 0);
    put(g, "stride x%u l0=%d l1=0 l2=0", xr, (int)s);
    put(g, "loop 0 count=%u body=1", lc);
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
        g[i].ast = g[i].st ^ 0xACCF125700000000ull;
        g[i].mst = g[i].st ^ 0x3D0C3D0C00000000ull;
        g[i].cfg = cfg;
        g[i].n = cfg->geom.n;
        g[i].rows[0] = cfg->geom.ub_rows;
        g[i].rows[1] = cfg->geom.acc_rows;
        g[i].rows[2] = cfg->geom.wmem_rows;
        g[i].board = 1;
        g[i].loops = !cfg->no_loops;
        g[i].self = i;
        g[i].cores = cores;
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
            for (unsigned k = 0; k < local; k++) {
                /* room: what is left after the prologue (6), this round's collective loop (3)
                   and the halt */
                size_t left = (size_t)maxi + 6u > g[i].insns + 12u ? maxi + 6u - g[i].insns - 12u : 0;
                gen_item(&g[i], (unsigned)left);
            }
        }
        /* one round in four moves hundreds of rows: the network, not the prologue's DMA,
           then takes most of a core's cycles (the congestion bin of tpu-cover) */
        unsigned cap = cfg->coll_rows ? cfg->coll_rows : 2048u;
        unsigned n = cap > 8u && chance(&shared, 4)
                         ? (unsigned)range(&shared, cap < 256u ? 9u : 256u, cap)
                         : count(&shared, cap < 8u ? cap : 8u);
        unsigned mem = (unsigned)range(&shared, 0, 1);
        /* one round in three (loops on): the collective repeats in a loop of the same count on
           every core, its row advanced by an index register (each core its own stride; the
           same for allreduce, whose region is the same on every core) */
        unsigned lc = cfg->no_loops || !chance(&shared, 3) ? 0u : (unsigned)range(&shared, 1, 4);
        unsigned xr = 1u + (unsigned)(rnd(&shared) % (TPU_XREGS - 1u));
        int32_t ast = 0;
        switch (rnd(&shared) % 4) {
        case 0:
            for (unsigned i = 0; i < cores; i++) {
                if (lc)
                    put(&g[i], "loop 0 count=%u body=1", lc);
                put(&g[i], "barrier");
            }
            break;
        case 1: { /* one ACC region, the same rows on every core */
            unsigned nn = n < g[0].rows[1] ? n : g[0].rows[1];
            unsigned row;
            coll_window(&shared, g[0].rows[1], nn, lc, &row, &ast);
            int ring = chance(&shared, 2);
            for (unsigned i = 0; i < cores; i++) {
                coll_loop(&g[i], lc, xr, ast);
                put(&g[i], "allreduce acc row=%u%s rows=%u%s", row, xtext(lc, xr), nn,
                    ring ? " ring" : "");
            }
            break;
        }
        case 2: { /* from a random root into each core's own rows */
            unsigned nn = n < g[0].rows[mem] ? n : g[0].rows[mem];
            unsigned root = (unsigned)range(&shared, 0, cores - 1);
            for (unsigned i = 0; i < cores; i++) {
                unsigned row;
                coll_window(&g[i], g[i].rows[mem], nn, lc, &row, &ast);
                coll_loop(&g[i], lc, xr, ast);
                put(&g[i], "bcast %s row=%u%s rows=%u root=%u", mem_names[mem], row,
                    xtext(lc, xr), nn, root);
            }
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
                unsigned rf, rt;
                int32_t sf, stt;
                coll_window(&g[from], g[from].rows[mem], nn, lc, &rf, &sf);
                coll_window(&g[to], g[to].rows[mem], nn, lc, &rt, &stt);
                coll_loop(&g[from], lc, xr, sf);
                put(&g[from], "send %s row=%u%s rows=%u core=%u", mem_names[mem], rf,
                    xtext(lc, xr), nn, to);
                coll_loop(&g[to], lc, xr, stt);
                put(&g[to], "recv %s row=%u%s rows=%u core=%u", mem_names[mem], rt,
                    xtext(lc, xr), nn, from);
            }

            break;
        }
    }
    int bad = 0;
    for (unsigned i = 0; i < cores; i++) {
        put(&g[i], "halt");
        bad |= g[i].oom || g[i].insns > cfg->geom.imem_insns;
        /* every core's program, run through the sequencer and checked, ends done */
        struct simout so;
        if (!bad)
            simulate(&g[i], g[i].prog, g[i].nprog, 100000000u, 0, NULL, &so);
        bad |= !bad && so.code != 0;
        free(g[i].prog);
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
