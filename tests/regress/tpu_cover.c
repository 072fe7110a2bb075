/* SPDX-License-Identifier: Apache-2.0 */
/* tpu-cover: functional coverage of the regression's constrained-random programs (issue 16
   "Functional coverage"; docs/isa.md "Functional coverage"). It stands on the model's public
   API only (tpu/isa.h, tpu/asm.h, tpu/board.h, tpu/cli.h): every coverpoint is defined in the
   table `groups` below, its bins are enumerated from the ISA itself (so a new flag or op, e.g.
   `lw transpose`, becomes a bin as soon as tpu_insn_decode and tpu_insn_disasm know it) and hit
   from a job's program and the trace the model wrote for it.

     tpu-cover core  --mxu N --prog P.s --trace T [--log MODEL.LOG] [--args JOB.ARGS]
                     [--tag WORD]... -o OUT.cov
     tpu-cover board --mxu N --cores C --topology T --job DIR --model DIR [--rtl-log BOARD_TB.LOG]
                     [--tag WORD]... -o OUT.cov
     tpu-cover report [--holes K] [-o FILE] PATH...   (files, or folders: every *.cov in them;
                     at most K holes listed per group, default 50)
     tpu-cover bins [--mxu N]                          (the bins, one a line)

   A .cov file is one line per bin hit: "GROUP<TAB>BIN<TAB>COUNT". The report adds them up
   and prints, per group, the bins hit out of the bins that exist, and then every hole (a
   bin never hit), or the reason it cannot be hit. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tpu/asm.h"
#include "tpu/board.h"
#include "tpu/cli.h"
#include "tpu/isa.h"

#define PROG "tpu-cover"

_Noreturn static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, PROG ": error: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        die("out of memory");
    return p;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

/* ---- The coverpoints ---- */
enum { G_INSN, G_ERROR, G_HAZARD, G_PORT, G_ROWS, G_DMA, G_COLL, G_STATE, G_LOOP, G_LINK, G_SWEEP,
       G_COUNT };

static const struct {
    const char *name, *what;
} groups[G_COUNT] = {
    { "insn", "every instruction x flag combination: the mnemonic and the non-numeric fields of "
              "its disassembly (memories, op, bcast, accumulate, ring, ...), retired" },
    { "error", "each error code, ending a program (the trace's e line)" },
    { "hazard", "RAW/WAR/WAW row overlap between an instruction and the latest one of each other "
                "unit before it (no sync or collective between), per memory" },
    { "port", "the same pairs sharing a memory port without a row overlap" },
    { "rows", "row-range edges per instruction, memory, read/write: first row, last row, one row" },
    { "dma", "DMA corners: cols 1 and N, stride 0, rows overlapping in host memory, the last host byte" },
    { "coll", "each collective (with its flags) on each topology: single core, ring, torus" },
    { "state", "model outcomes and stall reasons: done, error halt, weight-load stall, network busy" },
    { "loop", "loops and index registers (docs/isa.md \"Loops\"), over the dispatched instructions: "
              "levels, nest depth, hoisted/re-armed/sibling inner loops, counts, shared body ends, "
              "strides per level and sign, each register and each operand kind with a register, "
              "negative register values, the errors a loop ends in, the registers' moduli (set, "
              "cleared, operands wrapped)" },
    { "link", "the board's links in the RTL run (board_tb's links line, --rtl-log): back-pressure, "
              "long stalls, faults hit, flits rejected, replays; NoC congestion (NET_BUSY > CYCLES/2)" },
    { "sweep", "the regression's sweeps the jobs ran under (tags: AXI stall, AXI latency, X-init, "
               "link stall); no holes: the job list decides" },
};

/* Bins known not to be reachable, with the reason (a hole that is no hole). */
static const struct {
    int group;
    const char *prefix;
    const char *reason;
} unreachable[] = {
    { G_ROWS, "lw wmem read one", "lw reads the N rows of a weight tile: one row only at N = 1, "
                                  "and the regression runs N >= 2" },
    { G_COLL, "single send", "a core on its own has no peer: send is error 8" },
    { G_COLL, "single recv", "a core on its own has no peer: recv is error 8" },
};

/* ---- Bins ---- */
typedef struct {
    int group;
    char *name;
    uint64_t hits;
    int exists; /* enumerated from the ISA (or a fixed list) */
} bin_t;

static bin_t *bins;
static size_t nbins, capbins;
static size_t *htab; /* open addressing, index + 1 */
static size_t hcap;

static uint64_t hash(int g, const char *s)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)g;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static bin_t *bin_get(int g, const char *name)
{
    if (nbins * 2 >= hcap) {
        size_t nc = hcap ? hcap * 2 : 1024;
        size_t *nt = calloc(nc, sizeof *nt);
        if (!nt)
            die("out of memory");
        for (size_t i = 0; i < nbins; i++) {
            size_t k = hash(bins[i].group, bins[i].name) & (nc - 1);
            while (nt[k])
                k = (k + 1) & (nc - 1);
            nt[k] = i + 1;
        }
        free(htab);
        htab = nt;
        hcap = nc;
    }
    size_t k = hash(g, name) & (hcap - 1);
    while (htab[k]) {
        bin_t *b = &bins[htab[k] - 1];
        if (b->group == g && strcmp(b->name, name) == 0)
            return b;
        k = (k + 1) & (hcap - 1);
    }
    if (nbins == capbins) {
        capbins = capbins ? capbins * 2 : 256;
        bins = realloc(bins, capbins * sizeof *bins);
        if (!bins)
            die("out of memory");
    }
    bins[nbins] = (bin_t){ g, xstrdup(name), 0, 0 };
    htab[k] = ++nbins;
    return &bins[nbins - 1];
}

static void hit(int g, uint64_t count, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    bin_get(g, buf)->hits += count;
}

static void exists(int g, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    bin_get(g, buf)->exists = 1;
}

/* ---- Instructions, generically ---- */
static const char *unit_name(unsigned opcode)
{
    if (tpu_opcode_is_collective(opcode))
        return "NET";
    switch (tpu_opcode_unit(opcode)) {
    case TPU_UNIT_DMA: return "DMA";
    case TPU_UNIT_WL: return "WL";
    case TPU_UNIT_MX: return "MX";
    case TPU_UNIT_VPU: return "VPU";
    default: return NULL;
    }
}

static int is_number(const char *s)
{
    if (*s == '-') /* a stride's l0=-8 */
        s++;
    if (!*s)
        return 0;
    int hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    if (hex && !*(s += 2))
        return 0;
    for (; *s; s++)
        if (!(hex ? isxdigit((unsigned char)*s) : isdigit((unsigned char)*s)))
            return 0;
    return 1;
}

/* The instruction's combination: its disassembly without the numbers ("vop min a=ub b=ub
   bcast dst=acc", "lw", "dma_in wmem", "allreduce acc ring"). Generic: whatever a flag
   makes the disassembler print becomes part of the name. */
static void combo_name(tpu_insn_t raw, char *out, size_t len)
{
    char dis[512], *save = NULL;
    tpu_insn_disasm(raw, dis, sizeof dis);
    size_t o = 0;
    out[0] = 0;
    for (char *t = strtok_r(dis, " ,", &save); t; t = strtok_r(NULL, " ,", &save)) {
        char tok[128];
        char *eq = strchr(t, '=');
        if (eq) {
            *eq = 0;
            char *v = eq + 1, *colon = strchr(v, ':'), *xr = strstr(v, "+x");
            if (xr)
                *xr = 0; /* row=16+x2 -> row=16: the register is the loop group's */
            if (colon)
                *colon = 0; /* a=ub:12 -> a=ub */
            if (is_number(v))
                continue;
            snprintf(tok, sizeof tok, "%s=%s", t, v);
        } else {
            if (is_number(t))
                continue;
            snprintf(tok, sizeof tok, "%s", t);
        }
        int w = snprintf(out + o, len - o, "%s%s", o ? " " : "", tok);
        if (w < 0 || (size_t)w >= len - o)
            break;
        o += (size_t)w;
    }
}


/* ---- Loops (docs/isa.md "Loops") ---- */
/* the operand of register slot s of an opcode (docs/isa.md "Instruction format"), or NULL */
static const char *slot_name(unsigned opcode, unsigned s)
{
    static const char *const dma[] = { "addr", "row", NULL }, *const lw[] = { "w", NULL, NULL },
                             *const mm[] = { "ub", "acc", NULL }, *const vop[] = { "a", "b", "dst" },
                             *const red[] = { "src", "dst", NULL }, *const net[] = { "row", NULL, NULL };
    if (s > 2)
        return NULL;
    switch (opcode) {
    case TPU_OP_DMA_IN: case TPU_OP_DMA_OUT: return dma[s];
    case TPU_OP_LW: return lw[s];
    case TPU_OP_MATMUL: return mm[s];
    case TPU_OP_VOP: return vop[s];
    case TPU_OP_VRED: case TPU_OP_SOFTMAX: return red[s];
    case TPU_OP_SEND: case TPU_OP_RECV: case TPU_OP_BCAST: case TPU_OP_ALLREDUCE: return net[s];
    default: return NULL;
    }
}

static const char *const loop_fixed[] = {
    "hoisted inner loop (armed once, outside its outer body)",
    "re-armed inner loop (armed at its place in the outer body)",
    "sibling loops at one level (two bodies in one outer body)",
    "loop count=1",
    "loop count 2..16",
    "loop count > 16",
    "loop body of one instruction",
    "bodies of two levels ending at the same instruction",
    "stride of a register set again (between nests)",
    "negative register value on an operand",
    "error 2 from a register (an operand leaves its memory in some iteration)",
    "error 3 from a loop (count, skip or body 0)",
    "error 10 (a malformed nest)",
    "error in a later iteration (a loop index > 0)",
    "error 1 from a matmul's reserved acc_first (beside accumulate, or level 6)",
    "error 1 from a loop of a reserved level (6, 7)",
    "modulus form dispatched (stride xR mod=M, M = 2^k)",
    "modulus cleared (stride xR mod=0, k = 0)",
    "a row operand that wrapped (its register's modulus changed the row)",
    "a host address that wrapped (its register's modulus changed the address)",
    "error 1 from a stride's reserved modulus (k 17 .. 31, or a reserved bit of the form)",
    "an operand resolved modulo 2^k in a later iteration (a loop index > 0)",
};

/* matmul acc_mode=first:lL (docs/isa.md "Loops"), per level L, as dispatched: the outcome
   (overwrite when i_L .. i_5 are all 0, else accumulate) and where L stands (a level whose
   body holds the matmul, or one inside its own, which runs no iteration there) */
static const char *const acc_first_fixed[] = {
    "acc_mode=first:l%u overwrote, level %u enclosing it (its first iteration there)",
    "acc_mode=first:l%u accumulated (a later iteration of level %u or of one inside it)",
    "acc_mode=first:l%u overwrote, level %u not enclosing it (all its indices 0)",
    "acc_mode=first:l%u overwrote in a later iteration of an outer level (some i_k > 0, k < %u)",
};

static void loop_universe(void)
{
    for (unsigned l = 0; l < TPU_LOOP_LEVELS; l++) {
        exists(G_LOOP, "level %u armed", l);
        exists(G_LOOP, "nest depth %u", l + 1u);
        exists(G_LOOP, "stride l%u negative", l);
        exists(G_LOOP, "stride l%u zero", l);
        exists(G_LOOP, "stride l%u positive", l);
    }
    for (unsigned r = 1; r < TPU_XREGS; r++)
        exists(G_LOOP, "register x%u on an operand", r);
    for (unsigned op = 0; op < 256; op++) {
        const char *mn = tpu_opcode_name(op);
        if (!mn)
            continue;
        for (unsigned sl = 0; sl < 3; sl++)
            if (slot_name(op, sl))
                exists(G_LOOP, "register on %s %s", mn, slot_name(op, sl));
        if (tpu_opcode_is_collective(op))
            exists(G_LOOP, "%s in a loop body", mn);
    }
    for (size_t j = 0; j < sizeof loop_fixed / sizeof loop_fixed[0]; j++)
        exists(G_LOOP, "%s", loop_fixed[j]);
    for (unsigned l = 0; l < TPU_LOOP_LEVELS; l++)
        for (unsigned j = 0; j < 4; j++)
            if (j < 3 || l > 0) /* level 0 has no outer level */
                exists(G_LOOP, acc_first_fixed[j], l, l);
    exists(G_INSN, "loop"); /* enumerate_legal's templates have no body of 1 */
}

/* the loop bins of one dispatch (sq: the sequencer before it) */
static void loop_bins(const tpu_seq_t *sq, const tpu_dinsn_t *d, uint32_t pc, int *strided)
{
    unsigned depth = 0;
    for (unsigned l = 0; l < TPU_LOOP_LEVELS; l++)
        if (sq->armed[l] && pc >= sq->first[l] && pc <= sq->last[l])
            depth++;
    if (depth)
        hit(G_LOOP, 1, "nest depth %u", depth);
    if (d->opcode == TPU_OP_LOOP) {
        unsigned L = d->level % TPU_LOOP_LEVELS; /* dispatched: a level that exists */
        uint64_t first = (uint64_t)pc + d->skip, last = first + d->body - 1u;
        hit(G_LOOP, 1, "level %u armed", L);
        hit(G_LOOP, 1, "%s", d->n == 1 ? loop_fixed[3] : d->n <= 16 ? loop_fixed[4] : loop_fixed[5]);
        if (d->body == 1)
            hit(G_LOOP, 1, "%s", loop_fixed[6]);
        if (L > 0) {
            int inside = sq->armed[L - 1] && pc >= sq->first[L - 1] && pc <= sq->last[L - 1];
            hit(G_LOOP, 1, "%s", inside ? loop_fixed[1] : loop_fixed[0]);
            if (inside && sq->armed[L] && sq->first[L] != first && sq->first[L] >= sq->first[L - 1] &&
                sq->last[L] <= sq->last[L - 1])
                hit(G_LOOP, 1, "%s", loop_fixed[2]);
        }
        for (unsigned k = 0; k < L; k++)
            if (sq->armed[k] && sq->last[k] == last)
                hit(G_LOOP, 1, "%s", loop_fixed[7]);
    }
    if (d->opcode == TPU_OP_STRIDE && d->modform && d->xreg > 0 && d->xreg < TPU_XREGS) {
        hit(G_LOOP, 1, "%s", loop_fixed[d->modk ? 16 : 17]);
    } else if (d->opcode == TPU_OP_STRIDE && d->xreg > 0 && d->xreg < TPU_XREGS) {
        for (unsigned k = 0; k < (d->group ? 1u : 3u); k++) {
            unsigned l = d->group ? 3u : k;
            hit(G_LOOP, 1, "stride l%u %s", l, d->s[k] < 0 ? "negative" : d->s[k] ? "positive" : "zero");
        }
        if (strided[d->xreg])
            hit(G_LOOP, 1, "%s", loop_fixed[8]);
        strided[d->xreg] = 1;
    }
    for (unsigned sl = 0; sl < 3; sl++) {
        unsigned r = d->xsel[sl];
        if (!r || !slot_name(d->opcode, sl))
            continue;
        hit(G_LOOP, 1, "register x%u on an operand", r);
        hit(G_LOOP, 1, "register on %s %s", tpu_opcode_name(d->opcode), slot_name(d->opcode, sl));
        if ((int32_t)tpu_seq_xval(sq, r) < 0)
            hit(G_LOOP, 1, "%s", loop_fixed[9]);
    }
    /* an operand of a register with a modulus: did the mask change it? (the same instruction
       resolved without the moduli, compared field by field) */
    int modded = 0;
    for (unsigned sl = 0; sl < 3; sl++)
        modded |= d->xsel[sl] && d->xsel[sl] < TPU_XREGS && sq->modk[d->xsel[sl]];
    if (modded && !d->reserved) {
        tpu_seq_t plain = *sq;
        memset(plain.modk, 0, sizeof plain.modk);
        tpu_dinsn_t em = *d, ep = *d;
        tpu_seq_resolve(sq, &em);
        tpu_seq_resolve(&plain, &ep);
        if (em.addr != ep.addr)
            hit(G_LOOP, 1, "%s", loop_fixed[19]);
        ep.addr = em.addr;
        if (memcmp(&em, &ep, sizeof em) != 0)
            hit(G_LOOP, 1, "%s", loop_fixed[18]);
        int later = 0;
        for (unsigned l = 0; l < TPU_LOOP_LEVELS; l++)
            later |= sq->armed[l] && sq->idx[l] > 0;
        if (later)
            hit(G_LOOP, 1, "%s", loop_fixed[21]);
    }
    if (tpu_opcode_is_collective(d->opcode) && depth)
        hit(G_LOOP, 1, "%s in a loop body", tpu_opcode_name(d->opcode));
    if (d->opcode == TPU_OP_MATMUL && d->acc_first && !d->reserved) {
        unsigned L = d->acc_first - 1u, outer = 0;
        tpu_dinsn_t e = *d;
        tpu_seq_resolve(sq, &e); /* the model's own resolution: the mode as dispatched */
        for (unsigned k = 0; k < L; k++)
            outer |= sq->idx[k] != 0;
        if (e.accumulate)
            hit(G_LOOP, 1, acc_first_fixed[1], L, L);
        else
            hit(G_LOOP, 1, acc_first_fixed[L < depth ? 0 : 2], L, L);
        if (!e.accumulate && outer)
            hit(G_LOOP, 1, acc_first_fixed[3], L, L);
    }
}

static const char *rw_name(unsigned w) { return w ? "write" : "read"; }

/* Every legal (opcode, flags) pair: an instruction whose flags decode without a reserved bit
   and pass the dispatch checks' codes 1 and 3 for some choice of the other fields. */
typedef struct {
    tpu_insn_t raw;
    int check; /* tpu_insn_check of this template */
} legal_t;

static legal_t *legal;
static size_t nlegal;

static void enumerate_legal(const tpu_core_geom_t *g)
{
    static const uint32_t w1s[] = { 0, 1, 0x10001u };
    static const uint32_t w2s[] = { 0, 0x10000u, 0x10001u };
    static const uint32_t w3s[] = { 0, 1, 2 };
    size_t cap = 1024;
    legal = xmalloc(cap * sizeof *legal);
    for (unsigned op = 0; op < 256; op++) {
        if (!tpu_opcode_name(op))
            continue;
        for (unsigned f = 0; f < 256; f++) {
            int found = 0;
            for (unsigned nn = 0; nn < 2 && !found; nn++)
                for (size_t a = 0; a < 3 && !found; a++)
                    for (size_t b = 0; b < 3 && !found; b++)
                        for (size_t c = 0; c < 3 && !found; c++) {
                            tpu_insn_t raw = { { op | f << 8 | nn << 16, w1s[a], w2s[b], w3s[c] } };
                            tpu_dinsn_t d;
                            tpu_insn_decode(raw, &d);
                            if (d.reserved)
                                continue;
                            int rc = tpu_insn_check(&d, g);
                            if (rc == TPU_ERR_OPCODE || rc == TPU_ERR_COUNT)
                                continue;
                            if (nlegal == cap) {
                                cap *= 2;
                                legal = realloc(legal, cap * sizeof *legal);
                                if (!legal)
                                    die("out of memory");
                            }
                            legal[nlegal++] = (legal_t){ raw, rc };
                            found = 1;
                        }
        }
    }
}

/* The bins that exist: from the legal instructions and fixed lists. */
static void universe(unsigned n)
{
    tpu_core_geom_t g = tpu_core_geom_default(n);
    enumerate_legal(&g);
    /* (unit, memory, write) pairs each unit can touch, for the hazard and port bins */
    unsigned touch[6][TPU_MEM_COUNT][2];
    memset(touch, 0, sizeof touch);
    static const char *units[] = { "DMA", "WL", "MX", "VPU", "NET" };
    for (size_t i = 0; i < nlegal; i++) {
        char name[256];
        combo_name(legal[i].raw, name, sizeof name);
        tpu_dinsn_t d;
        tpu_insn_decode(legal[i].raw, &d);
        exists(G_INSN, "%s", name);
        if (tpu_opcode_is_collective(d.opcode)) {
            int p2p = d.opcode == TPU_OP_SEND || d.opcode == TPU_OP_RECV;
            if (!p2p)
                exists(G_COLL, "single %s", name);
            exists(G_COLL, "ring %s", name);
            exists(G_COLL, "torus %s", name);
        }
        const char *u = unit_name(d.opcode);
        if (!u)
            continue;
        /* a template with rows in range: footprints of every range it can have */
        tpu_dinsn_t e = d;
        e.n = e.n ? e.n : 1;
        if (d.opcode == TPU_OP_VRED || d.opcode == TPU_OP_SOFTMAX)
            e.length = e.length ? e.length : 1;
        tpu_footprint_t fp;
        if (tpu_insn_footprint(&e, n, &fp) <= 0)
            continue;
        unsigned ui = 0;
        while (strcmp(units[ui], u) != 0)
            ui++;
        for (unsigned r = 0; r < fp.count; r++) {
            touch[ui][fp.r[r].mem][fp.r[r].write] = 1;
            const char *mn = tpu_opcode_name(d.opcode);
            const char *mm = tpu_mem_name(fp.r[r].mem);
            exists(G_ROWS, "%s %s %s first", mn, mm, rw_name(fp.r[r].write));
            exists(G_ROWS, "%s %s %s last", mn, mm, rw_name(fp.r[r].write));
            exists(G_ROWS, "%s %s %s one", mn, mm, rw_name(fp.r[r].write));
        }
    }
    /* a collective dispatches like sync, with every unit idle (docs/board.md): no pair ends
       in NET (b = 4); a collective in flight can meet later instructions (a = 4) */
    for (unsigned a = 0; a < 5; a++)
        for (unsigned b = 0; b < 4; b++) {
            if (a == b)
                continue;
            for (unsigned m = 0; m < TPU_MEM_COUNT; m++) {
                const char *mm = tpu_mem_name(m);
                if (touch[a][m][1] && touch[b][m][0])
                    exists(G_HAZARD, "RAW %s->%s %s", units[a], units[b], mm);
                if (touch[a][m][0] && touch[b][m][1])
                    exists(G_HAZARD, "WAR %s->%s %s", units[a], units[b], mm);
                if (touch[a][m][1] && touch[b][m][1])
                    exists(G_HAZARD, "WAW %s->%s %s", units[a], units[b], mm);
                for (unsigned w = 0; w < 2; w++)
                    if (touch[a][m][w] && touch[b][m][w])
                        exists(G_PORT, "%s->%s %s %s port", units[a], units[b], mm, rw_name(w));
            }
        }
    for (int code = 1;; code++) {
        const char *en = tpu_err_name(code);
        if (!en || strcmp(en, "unknown error") == 0)
            break;
        exists(G_ERROR, "%d %s", code, en);
    }
    static const char *dmab[] = { "cols=1", "cols=N", "stride=0", "rows overlap in host memory",
                                  "last host byte" };
    for (unsigned k = 0; k < 2; k++)
        for (size_t j = 0; j < sizeof dmab / sizeof dmab[0]; j++)
            exists(G_DMA, "%s %s", k ? "dma_out" : "dma_in", dmab[j]);
    static const char *st[] = { "outcome done", "outcome error", "weight-load stall (WL_STALL > 0)",
                                "network busy (NET_BUSY > 0)" };
    for (size_t j = 0; j < sizeof st / sizeof st[0]; j++)
        exists(G_STATE, "%s", st[j]);
    static const char *lk[] = { "back-pressure (link stall > 0 %)", "long stall of every link",
                                "fault hit and reported by the link",
                                "flit rejected (corrupted or out of sequence)", "replay",
                                "congestion (a core's NET_BUSY > CYCLES / 2)" };
    for (size_t j = 0; j < sizeof lk / sizeof lk[0]; j++)
        exists(G_LINK, "%s", lk[j]);
    loop_universe();
}

/* ---- Collecting from a job ---- */
typedef struct {
    tpu_insn_t *prog;
    size_t count;
    unsigned char *retired; /* per pc */
    int err_code;
    uint32_t err_pc;
    int have_trace;
    uint32_t *seq_pc;       /* the pc of each dispatched instruction, in trace order */
    size_t nseq, capseq;
} run_t;

static void load_prog(const char *path, unsigned n, run_t *r)
{
    char err[512], *src, *errors = NULL;
    size_t len;
    if (tpu_file_read(path, TPU_LIM_ASM_BYTES_MAX, "an assembly program", &src, &len, err, sizeof err))
        die("%s", err);
    int ne = tpu_asm_len(src, len, path, n, &r->prog, &r->count, &errors);
    if (ne != 0)
        die("%s: does not assemble:\n%s", path, errors ? errors : "out of memory");
    free(errors);
    free(src);
    r->retired = calloc(r->count + 1, 1);
    if (!r->retired)
        die("out of memory");
}

static void load_trace(const char *path, run_t *r)
{
    FILE *f = fopen(path, "r");
    if (!f)
        die("%s: cannot read: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    long k;
    r->have_trace = 1;
    int fmt = 1; /* "# tpu-core-trace 2" and 3: r <seq> <pc> <i0.i1.i2.i3.i4.i5> ..., e <seq> <pc> <code> */
    while ((k = tpu_file_getline(&line, &cap, f, TPU_LIM_LINE_BYTES_MAX)) >= 0) {
        unsigned long seq, pc;
        int code;
        if (strncmp(line, "# tpu-core-trace ", 17) == 0) {
            fmt = atoi(line + 17);
        } else if (line[0] == 'r' && line[1] == ' ' &&
                   (fmt >= 2 ? sscanf(line + 2, "%lu %lu", &seq, &pc) == 2
                             : sscanf(line + 2, "%lu", &pc) == 1)) {
            if (pc < r->count)
                r->retired[pc] = 1;
            if (r->nseq == r->capseq) {
                r->capseq = r->capseq ? r->capseq * 2 : 1024;
                r->seq_pc = realloc(r->seq_pc, r->capseq * sizeof *r->seq_pc);
                if (!r->seq_pc)
                    die("out of memory");
            }
            r->seq_pc[r->nseq++] = (uint32_t)pc;
        } else if (line[0] == 'e' && line[1] == ' ' &&
                   (fmt >= 2 ? sscanf(line + 2, "%lu %lu %d", &seq, &pc, &code) == 3
                             : sscanf(line + 2, "%lu %d", &pc, &code) == 2)) {
            r->err_code = code;
            r->err_pc = (uint32_t)pc;
        }
    }
    if (k == -2)
        die("%s: a line longer than %zu bytes", path, TPU_LIM_LINE_BYTES_MAX);
    free(line);
    fclose(f);
}

/* "NAME=VALUE" counters from a line holding "counters:" (tpu-run's log, tpu-board-run's
   core<i>.counters). */
static void load_counters(const char *path, uint64_t *wl_stall, uint64_t *net_busy, int *found,
                          int *congested)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0;
    while (tpu_file_getline(&line, &cap, f, TPU_LIM_LINE_BYTES_MAX) >= 0) {
        const char *c = strstr(line, "counters:");
        if (!c)
            continue;
        const char *p;
        if ((p = strstr(c, "WL_STALL=")))
            *wl_stall += strtoull(p + 9, NULL, 10);
        uint64_t nb = 0, cy = 0;
        if ((p = strstr(c, "NET_BUSY=")))
            *net_busy += nb = strtoull(p + 9, NULL, 10);
        if ((p = strstr(c, "CYCLES=")))
            cy = strtoull(p + 7, NULL, 10);
        if (congested && cy && 2 * nb > cy)
            *congested = 1;
        *found = 1;
    }
    free(line);
    fclose(f);
}

static uint64_t hostmem_of_args(const char *path)
{
    uint64_t mib = 64; /* the runners' default */
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f)
        return mib << 20;
    char *line = NULL;
    size_t cap = 0;
    while (tpu_file_getline(&line, &cap, f, TPU_LIM_LINE_BYTES_MAX) >= 0)
        if (strncmp(line, "--hostmem-mib", 13) == 0)
            mib = strtoull(line + 13 + strspn(line + 13, " ="), NULL, 10);
    free(line);
    fclose(f);
    return mib << 20;
}

static void collect(const run_t *r, unsigned n, const char *topo, uint64_t host_bytes)
{
    tpu_core_geom_t g = tpu_core_geom_default(n);
    unsigned rows[TPU_MEM_COUNT] = { g.ub_rows, g.acc_rows, g.wmem_rows };
    /* the latest instruction of each unit since the last sync */
    static const char *units[] = { "DMA", "WL", "MX", "VPU", "NET" };
    long last[5] = { -1, -1, -1, -1, -1 };
    tpu_dinsn_t lastd[5]; /* each one as dispatched (registers added, acc_first resolved) */
    /* the dispatched instructions in order, through the sequencer: each as dispatched (its
       registers added), as the trace's r lines show it */
    tpu_seq_t sq;
    tpu_seq_reset(&sq);
    int strided[TPU_XREGS] = { 0 };
    for (size_t q = 0; q < r->nseq; q++) {
        uint32_t pc = r->seq_pc[q];
        if (pc >= r->count)
            continue;
        tpu_dinsn_t d;
        tpu_insn_decode(r->prog[pc], &d);
        loop_bins(&sq, &d, pc, strided);
        int af = d.opcode == TPU_OP_MATMUL && d.acc_first; /* resolved away at dispatch */
        tpu_seq_resolve(&sq, &d);
        tpu_seq_step(&sq, &d, pc);
        tpu_insn_t raw = tpu_insn_encode(&d);
        char name[256];
        /* the combination as written for a matmul's acc_mode=first (`matmul acc_mode=first`;
           its outcome and level are the loop group's), else as dispatched */
        combo_name(af ? r->prog[pc] : raw, name, sizeof name);
        hit(G_INSN, 1, "%s", name);
        if (tpu_opcode_is_collective(d.opcode))
            hit(G_COLL, 1, "%s %s", topo, name);
        if (d.opcode == TPU_OP_SYNC) {
            for (int u = 0; u < 5; u++)
                last[u] = -1;
            continue;
        }
        if (tpu_opcode_is_collective(d.opcode))
            for (int u = 0; u < 4; u++)
                last[u] = -1; /* it dispatches with every unit idle, like sync */
        const char *un = unit_name(d.opcode);
        if (!un)
            continue;
        int ui = 0;
        while (strcmp(units[ui], un) != 0)
            ui++;
        tpu_footprint_t fp;
        int nr = tpu_insn_footprint(&d, n, &fp);
        for (int k = 0; k < nr; k++) {
            const char *mn = tpu_opcode_name(d.opcode), *mm = tpu_mem_name(fp.r[k].mem);
            if (fp.r[k].lo == 0)
                hit(G_ROWS, 1, "%s %s %s first", mn, mm, rw_name(fp.r[k].write));
            if (fp.r[k].hi + 1 == rows[fp.r[k].mem])
                hit(G_ROWS, 1, "%s %s %s last", mn, mm, rw_name(fp.r[k].write));
            if (fp.r[k].lo == fp.r[k].hi)
                hit(G_ROWS, 1, "%s %s %s one", mn, mm, rw_name(fp.r[k].write));
        }
        for (int u = 0; u < 5; u++) {
            if (u == ui || last[u] < 0)
                continue;
            const tpu_dinsn_t p = lastd[u];
            tpu_footprint_t pf;
            int np = tpu_insn_footprint(&p, n, &pf);
            int row_conflict = 0;
            for (int a = 0; a < np; a++)
                for (int b = 0; b < nr; b++) {
                    const tpu_fp_range_t *x = &pf.r[a], *y = &fp.r[b];
                    if (x->mem != y->mem || x->hi < y->lo || y->hi < x->lo)
                        continue;
                    const char *mm = tpu_mem_name(x->mem);
                    if (x->write && !y->write)
                        hit(G_HAZARD, 1, "RAW %s->%s %s", units[u], un, mm);
                    else if (!x->write && y->write)
                        hit(G_HAZARD, 1, "WAR %s->%s %s", units[u], un, mm);
                    else if (x->write && y->write)
                        hit(G_HAZARD, 1, "WAW %s->%s %s", units[u], un, mm);
                    else
                        continue;
                    row_conflict = 1;
                }
            if (!row_conflict)
                for (unsigned m = 0; m < TPU_MEM_COUNT; m++)
                    for (unsigned w = 0; w < 2; w++) {
                        unsigned bit = w ? TPU_PORT_WR(m) : TPU_PORT_RD(m);
                        if (pf.ports & fp.ports & bit)
                            hit(G_PORT, 1, "%s->%s %s %s port", units[u], un, tpu_mem_name(m), rw_name(w));
                    }
        }
        last[ui] = (long)pc;
        lastd[ui] = d;
        if (d.opcode == TPU_OP_DMA_IN || d.opcode == TPU_OP_DMA_OUT) {
            const char *mn = tpu_opcode_name(d.opcode);
            uint64_t eb = tpu_mem_elem_bytes(d.mem), rowb = (uint64_t)d.cols * eb;
            if (d.cols == 1)
                hit(G_DMA, 1, "%s cols=1", mn);
            if (d.cols == n)
                hit(G_DMA, 1, "%s cols=N", mn);
            if (d.stride == 0)
                hit(G_DMA, 1, "%s stride=0", mn);
            if (d.n > 1 && d.stride < rowb)
                hit(G_DMA, 1, "%s rows overlap in host memory", mn);
            uint64_t end = (uint64_t)d.addr + (uint64_t)(d.n ? d.n - 1 : 0) * d.stride + rowb;
            if (d.n && end == host_bytes)
                hit(G_DMA, 1, "%s last host byte", mn);
        }
    }
    if (r->have_trace && r->err_code && r->err_pc < r->count) {
        tpu_dinsn_t d;
        tpu_insn_decode(r->prog[r->err_pc], &d);
        if (r->err_code == TPU_ERR_LOOP)
            hit(G_LOOP, 1, "%s", loop_fixed[12]);
        if (r->err_code == TPU_ERR_COUNT && d.opcode == TPU_OP_LOOP)
            hit(G_LOOP, 1, "%s", loop_fixed[11]);
        if (r->err_code == TPU_ERR_ROW && (d.xsel[0] | d.xsel[1] | d.xsel[2]))
            hit(G_LOOP, 1, "%s", loop_fixed[10]);
        if (r->err_code == TPU_ERR_OPCODE && d.opcode == TPU_OP_MATMUL && d.acc_first &&
            (d.accumulate || d.acc_first > TPU_LOOP_LEVELS))
            hit(G_LOOP, 1, "%s", loop_fixed[14]);
        if (r->err_code == TPU_ERR_OPCODE && d.opcode == TPU_OP_LOOP && d.level >= TPU_LOOP_LEVELS)
            hit(G_LOOP, 1, "%s", loop_fixed[15]);
        if (r->err_code == TPU_ERR_OPCODE && d.opcode == TPU_OP_STRIDE && d.modform)
            hit(G_LOOP, 1, "%s", loop_fixed[20]);
        int later = 0;
        for (unsigned l = 0; l < TPU_LOOP_LEVELS; l++)
            later |= sq.armed[l] && sq.idx[l] > 0;
        if (later)
            hit(G_LOOP, 1, "%s", loop_fixed[13]);
    }
    if (r->have_trace) {
        if (r->err_code) {
            hit(G_ERROR, 1, "%d %s", r->err_code, tpu_err_name(r->err_code));
            hit(G_STATE, 1, "outcome error");
        } else {
            hit(G_STATE, 1, "outcome done");
        }
    }
}

static void write_cov(const char *path)
{
    char err[512];
    tpu_out_t o;
    if (tpu_out_open(&o, path, err, sizeof err))
        die("%s", err);
    for (size_t i = 0; i < nbins; i++)
        if (bins[i].hits)
            fprintf(o.f, "%s\t%s\t%" PRIu64 "\n", groups[bins[i].group].name, bins[i].name, bins[i].hits);
    if (tpu_out_commit(&o, err, sizeof err))
        die("%s", err);
}

/* board_tb's "links: L, stall P%, S long stall(s), A fault(s) armed, H hit and reported by the
   link; F flit(s) found corrupted or out of sequence, R replay(s)" line (docs/board.md) */
static void link_bins(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        die("%s: cannot read: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    while (tpu_file_getline(&line, &cap, f, TPU_LIM_LINE_BYTES_MAX) >= 0) {
        unsigned l, p;
        unsigned long long st, a, h, fl, r;
        const char *c = strstr(line, "links: ");
        if (!c || sscanf(c, "links: %u, stall %u%%, %llu long stall(s), %llu fault(s) armed, %llu "
                            "hit and reported by the link; %llu flit(s) found corrupted or out of "
                            "sequence, %llu replay(s)", &l, &p, &st, &a, &h, &fl, &r) != 7)
            continue;
        if (p)
            hit(G_LINK, 1, "back-pressure (link stall > 0 %%)");
        if (st)
            hit(G_LINK, 1, "long stall of every link");
        if (h)
            hit(G_LINK, 1, "fault hit and reported by the link");
        if (fl)
            hit(G_LINK, 1, "flit rejected (corrupted or out of sequence)");
        if (r)
            hit(G_LINK, 1, "replay");
    }
    free(line);
    fclose(f);
}

/* ---- Report ---- */
static size_t files_read;

static void read_cov(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        die("%s: cannot read: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    long k;
    unsigned ln = 0;
    while ((k = tpu_file_getline(&line, &cap, f, TPU_LIM_LINE_BYTES_MAX)) >= 0) {
        ln++;
        line[strcspn(line, "\n")] = 0;
        if (!line[0])
            continue;
        char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        if (!t2)
            die("%s:%u: expected GROUP<TAB>BIN<TAB>COUNT", path, ln);
        *t1 = *t2 = 0;
        int g = 0;
        while (g < G_COUNT && strcmp(groups[g].name, line) != 0)
            g++;
        if (g == G_COUNT)
            die("%s:%u: unknown group '%s'", path, ln, line);
        uint64_t c;
        if (tpu_cli_dec_n(t2 + 1, strlen(t2 + 1), &c))
            die("%s:%u: bad count '%s'", path, ln, t2 + 1);
        bin_get(g, t1 + 1)->hits += c;
    }
    free(line);
    fclose(f);
    files_read++;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void read_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        die("%s: %s", path, strerror(errno));
    if (!S_ISDIR(st.st_mode)) {
        read_cov(path);
        return;
    }
    DIR *d = opendir(path);
    if (!d)
        die("%s: cannot read: %s", path, strerror(errno));
    char **names = NULL;
    size_t nn = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 4, ".cov") != 0)
            continue;
        if (nn == cap) {
            cap = cap ? cap * 2 : 64;
            names = realloc(names, cap * sizeof *names);
            if (!names)
                die("out of memory");
        }
        size_t pl = strlen(path) + l + 2;
        names[nn] = xmalloc(pl);
        snprintf(names[nn++], pl, "%s/%s", path, e->d_name);
    }
    closedir(d);
    qsort(names, nn, sizeof *names, cmp_str);
    for (size_t i = 0; i < nn; i++) {
        read_cov(names[i]);
        free(names[i]);
    }
    free(names);
}

static const char *why_unreachable(const bin_t *b)
{
    for (size_t i = 0; i < sizeof unreachable / sizeof unreachable[0]; i++)
        if (unreachable[i].group == b->group &&
            strncmp(b->name, unreachable[i].prefix, strlen(unreachable[i].prefix)) == 0)
            return unreachable[i].reason;
    return NULL;
}

static int cmp_bin(const void *a, const void *b)
{
    const bin_t *x = a, *y = b;
    if (x->group != y->group)
        return x->group - y->group;
    return strcmp(x->name, y->name);
}

static int report(FILE *o, unsigned holes_max)
{
    qsort(bins, nbins, sizeof *bins, cmp_bin);
    free(htab);
    htab = NULL;
    hcap = 0;
    unsigned tot_bins = 0, tot_hit = 0, tot_unr = 0;
    fprintf(o, "coverage: %zu coverage files (one per job)\n", files_read);
    fprintf(o, "%-7s %6s %6s %6s %7s  %s\n", "group", "bins", "hit", "holes", "hit %", "coverpoint");
    for (int g = 0; g < G_COUNT; g++) {
        unsigned nb = 0, nh = 0, nu = 0;
        for (size_t i = 0; i < nbins; i++) {
            const bin_t *b = &bins[i];
            if (b->group != g || !(b->exists || b->hits))
                continue;
            if (g == G_SWEEP) {
                nb++, nh++;
                continue;
            }
            nb++;
            if (b->hits)
                nh++;
            else if (why_unreachable(b))
                nu++;
        }
        fprintf(o, "%-7s %6u %6u %6u %6.1f%%  %s\n", groups[g].name, nb, nh, nb - nh - nu,
                nb ? 100.0 * nh / nb : 100.0, groups[g].what);
        if (g != G_SWEEP) /* the sweep only lists what the jobs ran under */
            tot_bins += nb, tot_hit += nh, tot_unr += nu;
    }
    unsigned holes = tot_bins - tot_hit - tot_unr;
    fprintf(o, "%-7s %6u %6u %6u %6.1f%%  (without sweep; %u bins cannot be hit, reasons below)\n", "total", tot_bins,
            tot_hit, holes, tot_bins ? 100.0 * tot_hit / tot_bins : 100.0, tot_unr);
    for (int g = 0; g < G_COUNT; g++) {
        unsigned shown = 0;
        for (size_t i = 0; i < nbins; i++) {
            const bin_t *b = &bins[i];
            if (b->group != g || b->hits || !b->exists || g == G_SWEEP || why_unreachable(b))
                continue;
            if (shown++ < holes_max)
                fprintf(o, "hole: %s: %s\n", groups[g].name, b->name);
        }
        if (shown > holes_max)
            fprintf(o, "hole: %s: ... and %u more (--holes K shows K per group)\n", groups[g].name,
                    shown - holes_max);
    }
    for (size_t i = 0; i < nbins; i++) {
        const bin_t *b = &bins[i];
        const char *why = why_unreachable(b);
        if (!b->hits && b->exists && why)
            fprintf(o, "cannot be hit: %s: %s: %s\n", groups[b->group].name, b->name, why);
    }
    for (size_t i = 0; i < nbins; i++) {
        const bin_t *b = &bins[i];
        if (b->group == G_SWEEP)
            fprintf(o, "sweep: %s: %" PRIu64 " jobs\n", b->name, b->hits);
        else if (b->hits && !b->exists)
            fprintf(o, "not enumerated (hit %" PRIu64 " times): %s: %s\n", b->hits,
                    groups[b->group].name, b->name);
    }
    return 0;
}

/* ---- main ---- */
enum { O_MXU, O_PROG, O_TRACE, O_LOG, O_ARGS, O_TAG, O_OUT, O_CORES, O_TOPO, O_JOB, O_MODEL,
       O_HOLES, O_RTL_LOG, O_HELP };
static const tpu_cli_opt_t opts[] = {
    { "mxu", 0, TPU_CLI_VALUE, O_MXU },       { "prog", 0, TPU_CLI_VALUE, O_PROG },
    { "trace", 0, TPU_CLI_VALUE, O_TRACE },   { "log", 0, TPU_CLI_VALUE, O_LOG },
    { "args", 0, TPU_CLI_VALUE, O_ARGS },     { "tag", 0, TPU_CLI_VALUE | TPU_CLI_MULTI, O_TAG },
    { "output", 'o', TPU_CLI_VALUE, O_OUT },  { "cores", 0, TPU_CLI_VALUE, O_CORES },
    { "topology", 0, TPU_CLI_VALUE, O_TOPO }, { "job", 0, TPU_CLI_VALUE, O_JOB },
    { "model", 0, TPU_CLI_VALUE, O_MODEL },   { "holes", 0, TPU_CLI_VALUE, O_HOLES },
    { "rtl-log", 0, TPU_CLI_VALUE, O_RTL_LOG }, { "help", 'h', 0, O_HELP },
    { NULL, 0, 0, 0 },
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: " PROG " core  --mxu N --prog P.s --trace T [--log MODEL.LOG] [--args JOB.ARGS] [--tag W]... -o OUT.cov\n"
            "       " PROG " board --mxu N --cores C --topology T --job DIR --model DIR [--rtl-log F] [--tag W]... -o OUT.cov\n"
            "       " PROG " report [--holes K] [-o FILE] PATH...   (.cov files or folders of them; K holes per group)\n"
            "       " PROG " bins [--mxu N]\n"
            "Functional coverage of constrained-random programs (docs/isa.md \"Functional coverage\").\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "core") && strcmp(cmd, "board") && strcmp(cmd, "report") && strcmp(cmd, "bins")) {
        fprintf(stderr, PROG ": error: unknown command '%s' (allowed: core, board, report, bins)\n", cmd);
        return 2;
    }
    tpu_cli_t p;
    tpu_cli_init(&p, argc - 1, argv + 1, opts);
    const char *name, *val, *prog = NULL, *trace = NULL, *log = NULL, *args = NULL, *out = NULL;
    const char *topo = NULL, *job = NULL, *model = NULL, *rtl_log = NULL;
    const char *tags[64], *paths[4096];
    size_t ntags = 0, npaths = 0;
    uint64_t n = 4, cores = 1, holes_max = 50;
    char err[512];
    int id;
    while ((id = tpu_cli_next(&p, &name, &val, err, sizeof err)) != TPU_CLI_END) {
        int rc = 0;
        switch (id) {
        case TPU_CLI_ERROR: die("%s", err);
        case TPU_CLI_POSITIONAL:
            if (npaths == sizeof paths / sizeof paths[0])
                die("more than %zu paths", npaths);
            paths[npaths++] = val;
            break;
        case O_MXU: rc = tpu_cli_count(name, val, 1, 256, &n, err, sizeof err); break;
        case O_CORES: rc = tpu_cli_count(name, val, 1, TPU_LIM_CORES_MAX, &cores, err, sizeof err); break;
        case O_HOLES: rc = tpu_cli_count(name, val, 0, 1000000, &holes_max, err, sizeof err); break;
        case O_PROG: prog = val; break;
        case O_TRACE: trace = val; break;
        case O_LOG: log = val; break;
        case O_ARGS: args = val; break;
        case O_OUT: out = val; break;
        case O_TOPO: topo = val; break;
        case O_JOB: job = val; break;
        case O_MODEL: model = val; break;
        case O_RTL_LOG: rtl_log = val; break;
        case O_TAG:
            if (ntags == sizeof tags / sizeof tags[0])
                die("more than %zu --tag", ntags);
            tags[ntags++] = val;
            break;
        case O_HELP: usage(stdout); return 0;
        }
        if (rc)
            die("%s", err);
    }
    if (!strcmp(cmd, "report")) {
        if (!npaths)
            die("report: no .cov file or folder given");
        universe(4);
        for (size_t i = 0; i < npaths; i++)
            read_path(paths[i]);
        if (!out)
            return report(stdout, (unsigned)holes_max);
        tpu_out_t o;
        if (tpu_out_open(&o, out, err, sizeof err))
            die("%s", err);
        report(o.f, (unsigned)holes_max);
        if (tpu_out_commit(&o, err, sizeof err))
            die("%s", err);
        return 0;
    }
    if (!strcmp(cmd, "bins")) {
        universe((unsigned)n);
        qsort(bins, nbins, sizeof *bins, cmp_bin);
        for (size_t i = 0; i < nbins; i++)
            printf("%s\t%s\n", groups[bins[i].group].name, bins[i].name);
        return 0;
    }
    if (npaths)
        die("%s: unexpected argument '%s'", cmd, paths[0]);
    if (!out)
        die("%s: -o OUT.cov is required", cmd);
    for (size_t i = 0; i < ntags; i++)
        hit(G_SWEEP, 1, "%s", tags[i]);
    if (!strcmp(cmd, "core")) {
        if (!prog || !trace)
            die("core: --prog and --trace are required");
        run_t r = { 0 };
        load_prog(prog, (unsigned)n, &r);
        load_trace(trace, &r);
        collect(&r, (unsigned)n, "single", hostmem_of_args(args));
        uint64_t wl = 0, net = 0;
        int found = 0;
        if (log)
            load_counters(log, &wl, &net, &found, NULL);
        if (wl)
            hit(G_STATE, 1, "weight-load stall (WL_STALL > 0)");
        if (net)
            hit(G_STATE, 1, "network busy (NET_BUSY > 0)");
    } else {
        if (!job || !model || !topo)
            die("board: --job, --model and --topology are required");
        unsigned rows, cols;
        if (tpu_board_topology_parse(topo, (unsigned)cores, &rows, &cols, err, sizeof err))
            die("%s", err);
        const char *tk = cores == 1 ? "single" : (rows == 1 || cols == 1) ? "ring" : "torus";
        uint64_t wl = 0, net = 0;
        int congested = 0;
        for (unsigned i = 0; i < cores; i++) {
            char pp[4096], tp[4096], cp[4096], ap[4096];
            snprintf(pp, sizeof pp, "%s/core%u.s", job, i);
            snprintf(ap, sizeof ap, "%s/core%u.args", job, i);
            snprintf(tp, sizeof tp, "%s/core%u.trace", model, i);
            snprintf(cp, sizeof cp, "%s/core%u.counters", model, i);
            run_t r = { 0 };
            load_prog(pp, (unsigned)n, &r);
            load_trace(tp, &r);
            collect(&r, (unsigned)n, tk, hostmem_of_args(ap));
            int found = 0;
            load_counters(cp, &wl, &net, &found, &congested);
            free(r.prog);
            free(r.retired);
            free(r.seq_pc);
        }
        if (wl)
            hit(G_STATE, 1, "weight-load stall (WL_STALL > 0)");
        if (net)
            hit(G_STATE, 1, "network busy (NET_BUSY > 0)");
        if (congested)
            hit(G_LINK, 1, "congestion (a core's NET_BUSY > CYCLES / 2)");
        if (rtl_log)
            link_bins(rtl_log);
    }
    write_cov(out);
    return 0;
}
