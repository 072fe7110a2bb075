/* SPDX-License-Identifier: Apache-2.0 */
/* Pass 5 (the instruction writer): assembly text for each instruction the tiler asks for,
   one per line, commented blocks per ONNX node; then the text is assembled with the model's
   assembler (tpu_asm_n), which also checks every field against its range. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpu/asm.h"
#include "tpu/cli.h"
#include "tpuc/tpuc.h"
#include "tpuc_internal.h"

int tpuc_asm(tpuc_prog_t *p, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = p->cap - p->len;
        int w = p->text ? vsnprintf(p->text + p->len, room, fmt, ap) : -2;
        va_end(ap);
        if (w >= 0 && (size_t)w < room) {
            p->len += (size_t)w;
            return 0;
        }
        if (w == -1) return -1;
        size_t cap = p->cap ? p->cap * 2 : 1 << 16;
        while (w > 0 && cap - p->len <= (size_t)w) cap *= 2;
        char *t = realloc(p->text, cap);
        if (!t) return -1;
        p->text = t;
        p->cap = cap;
    }
}

static const char *MEM[] = {"ub", "acc", "wmem"};

/* One instruction more: counted, the hook told. */
static void counted(tpuc_ectx_t *c)
{
    c->count++;
    if (c->hook) c->hook(c->hook_arg);
}

/* One line of the program's text (at most 511 characters); a failed write is remembered in
   c->oom. */
static int put(tpuc_ectx_t *c, const char *fmt, ...) TPUC_PRINTF(2, 3);
static int put(tpuc_ectx_t *c, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (tpuc_asm(c->p, "%s", line) == 0) return 0;
    c->oom = 1;
    return -1;
}

static int dma(tpuc_ectx_t *c, const char *mn, unsigned mem, uint64_t row, uint64_t rows,
               uint64_t cols, uint64_t addr, uint64_t stride)
{
    counted(c);
    c->wops += mem == 2; /* WMEM */
    if (c->dry) return 0;
    return put(c, "%s %s row=%llu rows=%llu cols=%llu addr=0x%llx stride=%llu\n", mn, MEM[mem],
               (unsigned long long)row, (unsigned long long)rows, (unsigned long long)cols,
               (unsigned long long)addr, (unsigned long long)stride);
}

int tpuc_e_dma_in(tpuc_ectx_t *c, unsigned mem, uint64_t row, uint64_t rows, uint64_t cols,
                  uint64_t addr, uint64_t stride)
{
    return dma(c, "dma_in", mem, row, rows, cols, addr, stride);
}

int tpuc_e_dma_out(tpuc_ectx_t *c, unsigned mem, uint64_t row, uint64_t rows, uint64_t cols,
                   uint64_t addr, uint64_t stride)
{
    return dma(c, "dma_out", mem, row, rows, cols, addr, stride);
}

int tpuc_e_lw(tpuc_ectx_t *c, uint64_t wrow)
{
    counted(c);
    c->wops++;
    if (c->dry) return 0;
    return put(c, "lw w=%llu\n", (unsigned long long)wrow);
}

int tpuc_e_mm(tpuc_ectx_t *c, uint64_t ub, uint64_t acc, uint64_t rows, int accumulate)
{
    counted(c);
    c->wops++;
    c->mxu_rows += rows;
    if (c->dry) return 0;
    return put(c, "matmul ub=%llu acc=%llu rows=%llu%s\n", (unsigned long long)ub,
               (unsigned long long)acc, (unsigned long long)rows,
               accumulate ? " accumulate" : "");
}

/* docs/isa.md's names of the VPU ops, in the order of TPU_VOP_* */
static const char *VOP[] = {"add", "sub", "mul", "max", "min", "cvt", "relu", "exp",
                            "tanh", "sigmoid", "gelu", "recip", "log", "rsqrt", "erf"};

int tpuc_e_vop(tpuc_ectx_t *c, unsigned op, unsigned amem, uint64_t arow, int bmem,
               uint64_t brow, int bcast, unsigned dmem, uint64_t drow, uint64_t rows)
{
    counted(c);
    if (c->dry) return 0;
    if (bmem < 0)
        return put(c, "vop %s a=%s:%llu dst=%s:%llu rows=%llu\n", VOP[op], MEM[amem],
                   (unsigned long long)arow, MEM[dmem], (unsigned long long)drow,
                   (unsigned long long)rows);
    return put(c, "vop %s a=%s:%llu b=%s:%llu%s dst=%s:%llu rows=%llu\n", VOP[op], MEM[amem],
               (unsigned long long)arow, MEM[bmem], (unsigned long long)brow,
               bcast ? " bcast" : "", MEM[dmem], (unsigned long long)drow,
               (unsigned long long)rows);
}

int tpuc_e_softmax(tpuc_ectx_t *c, uint64_t src, unsigned dmem, uint64_t dst, uint64_t g,
                   uint64_t len, uint64_t cs, uint64_t rs)
{
    counted(c);
    if (c->dry) return 0;
    return put(c,
               "softmax src=acc:%llu dst=%s:%llu rows=%llu length=%llu chunk_stride=%llu "
               "row_stride=%llu\n",
               (unsigned long long)src, MEM[dmem], (unsigned long long)dst,
               (unsigned long long)g, (unsigned long long)len, (unsigned long long)cs,
               (unsigned long long)rs);
}

int tpuc_e_vred(tpuc_ectx_t *c, const char *red, unsigned smem, uint64_t src, unsigned dmem,
                uint64_t dst, uint64_t g, uint64_t len, uint64_t cs, uint64_t rs)
{
    counted(c);
    if (c->dry) return 0;
    return put(c,
               "vred %s src=%s:%llu dst=%s:%llu rows=%llu length=%llu chunk_stride=%llu "
               "row_stride=%llu\n",
               red, MEM[smem], (unsigned long long)src, MEM[dmem], (unsigned long long)dst,
               (unsigned long long)g, (unsigned long long)len, (unsigned long long)cs,
               (unsigned long long)rs);
}

int tpuc_e_halt(tpuc_ectx_t *c)
{
    counted(c);
    return put(c, "halt\n");
}

/* ---- training's instructions (train.c) ---- */

int tpuc_e_lw_transpose(tpuc_ectx_t *c, uint64_t wrow)
{
    counted(c);
    c->wops++;
    if (c->dry) return 0;
    return put(c, "lw w=%llu transpose\n", (unsigned long long)wrow);
}

int tpuc_e_allreduce(tpuc_ectx_t *c, unsigned mem, uint64_t row, uint64_t rows)
{
    counted(c);
    if (c->dry) return 0;
    return put(c, "allreduce %s row=%llu rows=%llu\n", MEM[mem], (unsigned long long)row,
               (unsigned long long)rows);
}

int tpuc_e_comment(tpuc_ectx_t *c, const char *fmt, ...)
{
    if (c->dry) return 0;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    return put(c, "# %s\n", line);
}

void tpuc_imem_error(const tpuc_prog_t *p, const tpuc_hw_t *hw, size_t count, int partial,
                     char *err, size_t errlen)
{
    char big[300] = "";
    size_t k = 0, used[3] = {(size_t)-1, (size_t)-1, (size_t)-1};
    for (int r = 0; r < 3; r++) {
        size_t best = (size_t)-1, bn = 0;
        for (size_t i = 0; i < p->nlayers; i++) {
            size_t end = p->layers[i].end_insn ? p->layers[i].end_insn : count;
            size_t ni = p->orig ? p->layers[i].insns : end - p->layers[i].first_insn;
            if (i == used[0] || i == used[1]) continue;
            if (best == (size_t)-1 || ni > bn) { best = i; bn = ni; }
        }
        if (best == (size_t)-1) break;
        used[r] = best;
        int w = snprintf(big + k, sizeof big - k, "%s'%.60s' %zu", r ? ", " : "",
                         p->layers[best].node, bn);
        if (w < 0 || (size_t)w >= sizeof big - k) break;
        k += (size_t)w;
    }
    tpuc_err(err, errlen, "the program needs %s%zu instructions, IMEM holds %u (--imem-insns "
             "%u, at most 32768): a larger --mxu or a smaller --batch needs fewer%s%s",
             partial ? "more than " : "", count, hw->geom.imem_insns, hw->geom.imem_insns,
             big[0] ? "; the largest layers: " : "", big);
}

/* the first pc of the rolled program that stands for straight-line pc i or a later one */
static size_t map_pc(const size_t *orig, size_t n, size_t i)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (orig[mid] < i) lo = mid + 1; else hi = mid;
    }
    return lo;
}

static int is_insn_line(const char *a, const char *e)
{
    while (a < e && (*a == ' ' || *a == '\t' || *a == '\r')) a++;
    return a < e && *a != '#' && *a != ';';
}

/* The rolled program's text: each instruction disassembled, the comment lines that stood
   before a straight-line instruction kept before the first pc that stands for it (the node
   headers among them; those before instructions folded into a loop are dropped). */
static int rewrite_text(tpuc_prog_t *p, size_t nstraight, const tpu_insn_t *prog, size_t n,
                        const size_t *orig)
{
    size_t *cstart = malloc((nstraight + 2) * sizeof *cstart), *cend = malloc((nstraight + 2) * sizeof *cend);
    if (!cstart || !cend) { free(cstart); free(cend); return -1; }
    const char *t = p->text ? p->text : "", *end = t + p->len, *a = t, *com = t;
    size_t k = 0;
    while (a < end) {
        const char *nl = memchr(a, '\n', (size_t)(end - a));
        const char *le = nl ? nl + 1 : end;
        if (is_insn_line(a, nl ? nl : end)) {
            if (k < nstraight) { cstart[k] = (size_t)(com - t); cend[k] = (size_t)(a - t); }
            k++;
            com = le;
        }
        a = le;
    }
    if (k != nstraight) { free(cstart); free(cend); return -1; }
    size_t tail = (size_t)(com - t);
    tpuc_prog_t q;
    memset(&q, 0, sizeof q);
    int rc = 0;
    size_t done = (size_t)-1;
    char buf[256];
    for (size_t pc = 0; pc < n && rc == 0; pc++) {
        size_t o = orig[pc];
        if (o < nstraight && o != done) {
            rc |= tpuc_asm(&q, "%.*s", (int)(cend[o] - cstart[o]), t + cstart[o]);
            done = o;
        }
        tpu_insn_disasm(prog[pc], buf, sizeof buf);
        rc |= tpuc_asm(&q, "%s\n", buf);
    }
    if (rc == 0) rc = tpuc_asm(&q, "%.*s", (int)(p->len - tail), t + tail);
    free(cstart);
    free(cend);
    if (rc) { free(q.text); return -1; }
    free(p->text);
    p->text = q.text;
    p->len = q.len;
    p->cap = q.cap;
    return 0;
}

int tpuc_loops_on(const tpuc_hw_t *hw)
{
    const char *ev = getenv("TPUC_NO_LOOPS");
    return !hw->no_loops && !(ev && *ev && strcmp(ev, "0") != 0);
}

int tpuc_assemble_parts(tpuc_prog_t *p, const tpuc_hw_t *hw, size_t *starts, size_t nstarts,
                        char *err, size_t errlen)
{
    char *errors = NULL;
    tpu_insn_t *insns = NULL;
    size_t count = 0;
    int ne = tpu_asm_n(p->text ? p->text : "", "<compiled>", hw->geom.n, &insns, &count,
                       &errors);
    if (ne != 0) {
        /* the compiler wrote something the assembler refuses: a compiler bug */
        char *nl = errors ? strchr(errors, '\n') : NULL;
        if (nl) *nl = 0;
        tpuc_err(err, errlen, "internal error: the generated assembly does not assemble: %s",
                 errors ? errors : "out of memory");
        free(errors);
        return -1;
    }
    free(errors);
    for (size_t i = 0; i < p->nlayers; i++) { /* straight-line: each layer's own range */
        size_t e = p->layers[i].end_insn ? p->layers[i].end_insn : count;
        p->layers[i].insns = e - p->layers[i].first_insn;
    }
    if (!tpuc_loops_on(hw) || count == 0) {
        free(p->cut);
        free(p->tag);
        p->cut = NULL;
        p->tag = NULL;
        p->insns = insns;
        p->ninsns = count;
    } else {
        /* the loop pass: no nest across a part's start or a cut the caller set; layers (and
           a training step's phases: soft cuts and tags) are rolled on their own first, then
           a nest may cross them (the inference report attributes per dynamic instruction,
           the training report per pc, which the tags keep to one phase and layer) */
        uint8_t *cut = calloc(count + 1, 1);
        if (!cut) { free(insns); tpuc_err(err, errlen, "out of memory"); return -1; }
        if (p->cut) memcpy(cut, p->cut, count + 1);
        for (size_t i = 0; i < p->nlayers; i++) { /* soft: rolled apart first, then together */
            size_t f = p->layers[i].first_insn, e = p->layers[i].end_insn;
            if (f <= count && !cut[f]) cut[f] = 4;
            if (e && e <= count && !cut[e]) cut[e] = 4;
        }
        for (size_t i = 0; i < nstarts; i++)
            if (starts[i] <= count) cut[starts[i]] = 2; /* a START: strides 0 again */
        tpu_insn_t *out = NULL;
        size_t nout = 0, *orig = NULL;
        /* the WMEM rows a power of two: ring slot sequences roll modulo them */
        unsigned wk = 0;
        while (wk < 16 && (1u << wk) < hw->geom.wmem_rows) wk++;
        if ((1u << wk) != hw->geom.wmem_rows) wk = 0;
        int rc = tpuc_loops(insns, count, cut, p->tag, wk, &out, &nout, &orig, err, errlen);
        free(cut);
        free(p->cut);
        free(p->tag);
        p->cut = NULL;
        p->tag = NULL;
        if (rc) { free(insns); return -1; }
        size_t st[4];
        for (size_t i = 0; i < nstarts && i < 4; i++) st[i] = map_pc(orig, nout, starts[i]);
        /* the proof: the same dynamic instructions */
        if (tpuc_loops_expand_check(out, nout, st, nstarts < 4 ? nstarts : 4, insns, count,
                                    &p->loop_dispatches, err, errlen)) {
            free(insns); free(out); free(orig);
            return -1;
        }
        p->nrolled = nout;
        if (nout > TPU_LIM_IMEM_INSNS_MAX) {
            /* no IMEM holds it either way: the straight-line program, which the predictor
               can run in segments */
            free(out);
            free(orig);
            p->insns = insns;
            p->ninsns = count;
            goto checked;
        }
        for (size_t i = 0; i < nstarts && i < 4; i++) starts[i] = st[i];
        /* each layer keeps its straight-line range; its share of the program: the pcs that
           stand first for one of its instructions */
        for (size_t i = 0; i < p->nlayers; i++) {
            size_t e = p->layers[i].end_insn ? p->layers[i].end_insn : count;
            p->layers[i].insns = map_pc(orig, nout, e) - map_pc(orig, nout, p->layers[i].first_insn);
        }
        p->nloops = p->nstrides = 0;
        for (size_t i = 0; i < nout; i++) {
            unsigned op = out[i].w[0] & 0xFFu;
            p->nloops += op == TPU_OP_LOOP;
            p->nstrides += op == TPU_OP_STRIDE;
        }
        if (rewrite_text(p, count, out, nout, orig)) {
            free(insns); free(out); free(orig);
            tpuc_err(err, errlen, "out of memory (rewriting the program's text)");
            return -1;
        }
        /* the text is the program: it assembles to the same bits */
        tpu_insn_t *chk = NULL;
        size_t nchk = 0;
        ne = tpu_asm_n(p->text, "<rolled>", hw->geom.n, &chk, &nchk, NULL);
        if (ne != 0 || nchk != nout || memcmp(chk, out, nout * sizeof *out) != 0) {
            free(chk); free(insns); free(out); free(orig);
            tpuc_err(err, errlen, "internal error: the rolled program's text does not assemble "
                     "to the rolled program");
            return -1;
        }
        free(chk);
        p->straight = insns;
        p->nstraight = count;
        p->insns = out;
        p->ninsns = nout;
        p->orig = orig;
    }
checked:
    if (p->ninsns > hw->geom.imem_insns && !hw->predict_only) {
        tpuc_imem_error(p, hw, p->ninsns, 0, err, errlen);
        return -1;
    }
    return 0;
}

int tpuc_assemble(tpuc_prog_t *p, const tpuc_hw_t *hw, char *err, size_t errlen)
{
    return tpuc_assemble_parts(p, hw, NULL, 0, err, errlen);
}

void tpuc_prog_free(tpuc_prog_t *p)
{
    if (!p) return;
    free(p->text);
    free(p->insns);
    free(p->straight);
    free(p->orig);
    free(p->cut);
    free(p->tag);
    free(p->image);
    for (size_t i = 0; i < p->nlayers; i++) {
        free(p->layers[i].node);
        free(p->layers[i].op);
        free(p->layers[i].consts);
    }
    free(p->layers);
    memset(p, 0, sizeof *p);
}
