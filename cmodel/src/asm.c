/* SPDX-License-Identifier: Apache-2.0 */
/* The core's assembler: one instruction per line, key=value operands, .equ constants, labels
   and +, -, * expressions, index registers on address operands, .insn raw words (docs/isa.md
   "Assembly language", "Loops"). */
#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpu/asm.h"

#define MAX_TOKENS 32
#define MAX_KEYS 8

enum kind { K_U16, K_U32, K_COLS, K_MEMROW, K_MODE, K_CORE, K_S32, K_MOD };
/* P_MEM2: ub or acc only; P_LEVEL: a loop level 0..5; P_XREG: an index register x0..x15 */
enum posk { P_NONE, P_MEM, P_VOP, P_RED, P_MEM2, P_LEVEL, P_XREG };

struct keyspec {
    const char *name;
    enum kind kind;
    int required;
    unsigned xslot; /* 1 + the register slot of an address operand (+xR allowed); 0: none */
};

struct mnem {
    const char *name;
    unsigned opcode;
    enum posk pos;
    const char *flags[2]; /* bare-word flags */
    struct keyspec keys[MAX_KEYS];
};

/* Key slots per mnemonic, in the order listed (the encoder below uses the indices). */
static const struct mnem mnems[] = {
    { "nop", TPU_OP_NOP, P_NONE, { NULL, NULL }, { { NULL, K_U16, 0, 0 } } },
    { "sync", TPU_OP_SYNC, P_NONE, { NULL, NULL }, { { NULL, K_U16, 0, 0 } } },
    { "halt", TPU_OP_HALT, P_NONE, { NULL, NULL }, { { NULL, K_U16, 0, 0 } } },
    { "loop", TPU_OP_LOOP, P_LEVEL, { NULL, NULL },
      { { "count", K_U16, 1, 0 }, { "skip", K_U16, 0, 0 }, { "body", K_U16, 1, 0 },
        { NULL, K_U16, 0, 0 } } },
    { "stride", TPU_OP_STRIDE, P_XREG, { NULL, NULL },
      { { "l0", K_S32, 0, 0 }, { "l1", K_S32, 0, 0 }, { "l2", K_S32, 0, 0 },
        { "l3", K_S32, 0, 0 }, { "l4", K_S32, 0, 0 }, { "l5", K_S32, 0, 0 },
        { "mod", K_MOD, 0, 0 }, { NULL, K_U16, 0, 0 } } },
    { "dma_in", TPU_OP_DMA_IN, P_MEM, { NULL, NULL },
      { { "row", K_U16, 1, 2 }, { "rows", K_U16, 1, 0 }, { "cols", K_COLS, 1, 0 },
        { "addr", K_U32, 1, 1 }, { "stride", K_U32, 0, 0 }, { NULL, K_U16, 0, 0 } } },
    { "dma_out", TPU_OP_DMA_OUT, P_MEM, { NULL, NULL },
      { { "row", K_U16, 1, 2 }, { "rows", K_U16, 1, 0 }, { "cols", K_COLS, 1, 0 },
        { "addr", K_U32, 1, 1 }, { "stride", K_U32, 0, 0 }, { NULL, K_U16, 0, 0 } } },
    { "lw", TPU_OP_LW, P_NONE, { "transpose", NULL },
      { { "w", K_U16, 1, 1 }, { NULL, K_U16, 0, 0 } } },
    { "matmul", TPU_OP_MATMUL, P_NONE, { "accumulate", "acc" },
      { { "ub", K_U16, 1, 1 }, { "acc", K_U16, 1, 2 }, { "rows", K_U16, 1, 0 },
        { "acc_mode", K_MODE, 0, 0 }, { NULL, K_U16, 0, 0 } } },
    { "vop", TPU_OP_VOP, P_VOP, { "bcast", NULL },
      { { "a", K_MEMROW, 1, 1 }, { "b", K_MEMROW, 0, 2 }, { "dst", K_MEMROW, 1, 3 },
        { "rows", K_U16, 1, 0 }, { NULL, K_U16, 0, 0 } } },
    { "vred", TPU_OP_VRED, P_RED, { NULL, NULL },
      { { "src", K_MEMROW, 1, 1 }, { "dst", K_MEMROW, 1, 2 }, { "rows", K_U16, 1, 0 },
        { "length", K_U16, 1, 0 }, { "chunk_stride", K_U16, 1, 0 },
        { "row_stride", K_U16, 1, 0 }, { NULL, K_U16, 0, 0 } } },
    { "softmax", TPU_OP_SOFTMAX, P_NONE, { NULL, NULL },
      { { "src", K_MEMROW, 1, 1 }, { "dst", K_MEMROW, 1, 2 }, { "rows", K_U16, 1, 0 },
        { "length", K_U16, 1, 0 }, { "chunk_stride", K_U16, 1, 0 },
        { "row_stride", K_U16, 1, 0 }, { NULL, K_U16, 0, 0 } } },
    /* the board's collectives (docs/board.md "ISA extension") */
    { "send", TPU_OP_SEND, P_MEM2, { NULL, NULL },
      { { "row", K_U16, 1, 1 }, { "rows", K_U16, 1, 0 }, { "core", K_CORE, 1, 0 },
        { NULL, K_U16, 0, 0 } } },
    { "recv", TPU_OP_RECV, P_MEM2, { NULL, NULL },
      { { "row", K_U16, 1, 1 }, { "rows", K_U16, 1, 0 }, { "core", K_CORE, 1, 0 },
        { NULL, K_U16, 0, 0 } } },
    { "bcast", TPU_OP_BCAST, P_MEM2, { NULL, NULL },
      { { "row", K_U16, 1, 1 }, { "rows", K_U16, 1, 0 }, { "root", K_CORE, 1, 0 },
        { NULL, K_U16, 0, 0 } } },
    { "barrier", TPU_OP_BARRIER, P_NONE, { NULL, NULL }, { { NULL, K_U16, 0, 0 } } },
    { "allreduce", TPU_OP_ALLREDUCE, P_MEM2, { "ring", NULL },
      { { "row", K_U16, 1, 1 }, { "rows", K_U16, 1, 0 }, { NULL, K_U16, 0, 0 } } },
};
#define NMNEM (sizeof mnems / sizeof mnems[0])

struct equ {
    char *name;
    int64_t value;
    unsigned line; /* a label's line (labels are known before pass 2); 0 for .equ */
};

struct strb {
    char *p;
    size_t len, cap;
    int oom;
};

struct as {
    const char *file;
    unsigned n_mxu;
    unsigned line;
    int nerr;
    struct strb errs;
    struct equ *equs;
    size_t nequ, capequ;
    tpu_insn_t *prog;
    size_t count, cap;
    int oom;
};

struct tok {
    const char *s;
    size_t len;
    unsigned col;
};

static void sb_add(struct strb *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t c = b->cap ? b->cap * 2 : 256;
        while (c < b->len + n + 1)
            c *= 2;
        char *p = realloc(b->p, c);
        if (p == NULL) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = c;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void error_at(struct as *as, unsigned col, const char *fmt, ...)
{
    char msg[512];
    int k;
    as->nerr++;
    if (as->nerr > TPU_ASM_MAX_ERRORS)
        return;
    k = snprintf(msg, sizeof msg, "%s:%u:%u: error: ", as->file, as->line, col);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + k, sizeof msg - (size_t)k, fmt, ap);
    va_end(ap);
    sb_add(&as->errs, msg, strlen(msg));
    sb_add(&as->errs, "\n", 1);
}

static int tok_is(const struct tok *t, const char *s)
{
    return t->len == strlen(s) && !memcmp(t->s, s, t->len);
}

static const struct equ *find_equ(const struct as *as, const char *s, size_t n)
{
    for (size_t i = 0; i < as->nequ; i++)
        if (strlen(as->equs[i].name) == n && !memcmp(as->equs[i].name, s, n))
            return &as->equs[i];
    return NULL;
}

#define VAL_LIMIT ((int64_t)1 << 48)

/* internal: the index register x0 .. x15 named by [b, b+n) (no leading zero), or -1. */
static int xreg_name(const char *b, size_t n)
{
    if (n < 2 || n > 3 || b[0] != 'x' || b[1] < '0' || b[1] > '9' || (n == 3 && b[1] == '0'))
        return -1;
    int v = b[1] - '0';
    if (n == 3) {
        if (b[2] < '0' || b[2] > '9')
            return -1;
        v = 10 * v + (b[2] - '0');
    }
    return v < (int)TPU_XREGS ? v : -1;
}

/* internal: one term: a number (decimal, 0x hex) or a .equ name, optionally signed. */
static int eval_atom(struct as *as, const struct tok *t, const char **p, const char *end,
                     int64_t *v)
{
    const char *s = *p;
    int neg = 0;
    if (s < end && (*s == '-' || *s == '+')) {
        neg = *s == '-';
        s++;
    }
    const char *b = s;
    while (s < end && *s != '+' && *s != '-' && *s != '*')
        s++;
    size_t n = (size_t)(s - b);
    unsigned col = t->col + (unsigned)(b - t->s);
    if (n == 0) {
        error_at(as, col, "bad expression '%.*s', expected a number or a .equ name",
                 (int)t->len, t->s);
        return -1;
    }
    int64_t x = 0;
    if (isdigit((unsigned char)b[0])) {
        size_t i = 0;
        int base = 10;
        if (n > 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X')) {
            base = 16;
            i = 2;
        }
        for (; i < n; i++) {
            int d;
            char c = b[i];
            if (c >= '0' && c <= '9')
                d = c - '0';
            else if (base == 16 && c >= 'a' && c <= 'f')
                d = c - 'a' + 10;
            else if (base == 16 && c >= 'A' && c <= 'F')
                d = c - 'A' + 10;
            else
                d = -1;
            if (d < 0 || x > VAL_LIMIT) {
                error_at(as, col, "bad number '%.*s', expected a decimal or 0x hex number",
                         (int)n, b);
                return -1;
            }
            x = x * base + d;
        }
        if (x > VAL_LIMIT) {
            error_at(as, col, "number '%.*s' too large, expected at most 2^48", (int)n, b);
            return -1;
        }
    } else if (n == 1 && b[0] == '.') {
        x = (int64_t)as->count; /* this instruction's index */
    } else if (xreg_name(b, n) >= 0) {
        error_at(as, col, "'%.*s' in '%.*s', expected the register added once with + (e.g. "
                 "ROW+%.*s)", (int)n, b, (int)t->len, t->s, (int)n, b);
        return -1;
    } else if (isalpha((unsigned char)b[0]) || b[0] == '_') {
        const struct equ *e = find_equ(as, b, n);
        if (e == NULL) {
            error_at(as, col, "unknown name '%.*s', expected a number, a label or a .equ name "
                     "defined above", (int)n, b);
            return -1;
        }
        x = e->value;
    } else {
        error_at(as, col, "bad number '%.*s', expected a decimal or 0x hex number or a .equ name",
                 (int)n, b);
        return -1;
    }
    *v = neg ? -x : x;
    *p = s;
    return 0;
}

/* internal: expression = term { (+|-) term }, term = product or (for an address operand,
   xsel != NULL) one index register xR added with +, product = atom { * atom }. */
static int eval_x(struct as *as, const struct tok *t, int64_t *out, unsigned *xsel)
{
    const char *p = t->s, *end = t->s + t->len;
    int64_t sum = 0;
    int sign = 1, have_x = 0;
    if (xsel)
        *xsel = 0;
    for (;;) {
        int64_t prod;
        const char *b = p;
        while (b < end && *b != '+' && *b != '-' && *b != '*')
            b++;
        int xr = xreg_name(p, (size_t)(b - p));
        if (xr >= 0) {
            unsigned col = t->col + (unsigned)(p - t->s);
            if (xsel == NULL) {
                error_at(as, col, "index register '%.*s' in '%.*s', expected a number (only "
                         "address operands take +xR)", (int)(b - p), p, (int)t->len, t->s);
                return -1;
            }
            if (sign < 0 || (b < end && *b == '*') || (p > t->s && p[-1] == '*')) {
                error_at(as, col, "'%.*s' in '%.*s', expected the register added once with +",
                         (int)(b - p), p, (int)t->len, t->s);
                return -1;
            }
            if (have_x) {
                error_at(as, col, "second index register '%.*s' in '%.*s', expected one",
                         (int)(b - p), p, (int)t->len, t->s);
                return -1;
            }
            have_x = 1;
            *xsel = (unsigned)xr;
            p = b;
            prod = 0;
        } else if (eval_atom(as, t, &p, end, &prod)) {
            return -1;
        }
        while (p < end && *p == '*') {
            int64_t f;
            p++;
            if (eval_atom(as, t, &p, end, &f))
                return -1;
            /* both factors are within +-2^48: compare magnitudes before multiplying, so
               that the product is never computed when it does not fit */
            int64_t ap = prod < 0 ? -prod : prod, af = f < 0 ? -f : f;
            if (af != 0 && ap > VAL_LIMIT / af) {
                error_at(as, t->col, "value of '%.*s' too large, expected at most 2^48",
                         (int)t->len, t->s);
                return -1;
            }
            prod *= f;
            if (prod > VAL_LIMIT || prod < -VAL_LIMIT) {
                error_at(as, t->col, "value of '%.*s' too large, expected at most 2^48",
                         (int)t->len, t->s);
                return -1;
            }
        }
        sum += sign * prod;
        if (sum > VAL_LIMIT || sum < -VAL_LIMIT) {
            error_at(as, t->col, "value of '%.*s' too large, expected at most 2^48", (int)t->len,
                     t->s);
            return -1;
        }
        if (p >= end)
            break;
        sign = *p == '-' ? -1 : 1;
        p++;
        if (p >= end) {
            error_at(as, t->col + (unsigned)t->len, "end of '%.*s', expected a term after the "
                     "operator", (int)t->len, t->s);
            return -1;
        }
    }
    *out = sum;
    return 0;
}

static int eval(struct as *as, const struct tok *t, int64_t *out)
{
    return eval_x(as, t, out, NULL);
}

static int range(struct as *as, const struct tok *t, const char *key, int64_t v, int64_t lo,
                 int64_t hi, const char *why)
{
    if (v < lo || v > hi) {
        error_at(as, t->col, "value %lld out of range for '%s', expected %lld..%lld%s",
                 (long long)v, key, (long long)lo, (long long)hi, why);
        return -1;
    }
    return 0;
}

static int valid_name(const struct tok *t)
{
    if (t->len == 0 || !(isalpha((unsigned char)t->s[0]) || t->s[0] == '_'))
        return 0;
    for (size_t i = 1; i < t->len; i++)
        if (!(isalnum((unsigned char)t->s[i]) || t->s[i] == '_'))
            return 0;
    return 1;
}

static void emit(struct as *as, tpu_insn_t w)
{
    if (as->count == as->cap) {
        size_t c = as->cap ? as->cap * 2 : 64;
        tpu_insn_t *p = realloc(as->prog, c * sizeof *p);
        if (p == NULL) {
            as->oom = 1;
            return;
        }
        as->prog = p;
        as->cap = c;
    }
    as->prog[as->count++] = w;
}

static int add_equ(struct as *as, const struct tok *t, int64_t v, unsigned line);

static void do_equ(struct as *as, struct tok *t, int nt)
{
    if (nt < 3) {
        error_at(as, nt == 2 ? t[1].col + (unsigned)t[1].len : t[0].col + 4,
                 "end of line, expected '.equ NAME value'");
        return;
    }
    if (nt > 3) {
        error_at(as, t[3].col, "trailing '%.*s', expected end of line after '.equ NAME value'",
                 (int)t[3].len, t[3].s);
        return;
    }
    if (!valid_name(&t[1])) {
        error_at(as, t[1].col, "bad name '%.*s', expected a letter or _ then letters, digits, _",
                 (int)t[1].len, t[1].s);
        return;
    }
    if (xreg_name(t[1].s, t[1].len) >= 0) {
        error_at(as, t[1].col, "name '%.*s' is an index register, expected another name",
                 (int)t[1].len, t[1].s);
        return;
    }
    const struct equ *dup = find_equ(as, t[1].s, t[1].len);
    if (dup != NULL && dup->line) {
        error_at(as, t[1].col, "name '%.*s' is also a label (line %u), expected each name "
                 "defined once", (int)t[1].len, t[1].s, dup->line);
        return;
    }
    if (dup != NULL) {
        error_at(as, t[1].col, "duplicate .equ '%.*s', expected each name defined once",
                 (int)t[1].len, t[1].s);
        return;
    }
    int64_t v;
    if (eval(as, &t[2], &v))
        return;
    add_equ(as, &t[1], v, 0);
}

static void do_insn(struct as *as, struct tok *t, int nt)
{
    tpu_insn_t w = { { 0, 0, 0, 0 } };
    int k = 0;
    for (int i = 1; i < nt; i++) {
        /* split at commas */
        const char *s = t[i].s, *end = t[i].s + t[i].len;
        while (s < end) {
            const char *b = s;
            while (s < end && *s != ',')
                s++;
            if (s > b) {
                struct tok sub = { b, (size_t)(s - b), t[i].col + (unsigned)(b - t[i].s) };
                if (k == 4) {
                    error_at(as, sub.col, "trailing '%.*s', expected end of line after 4 words",
                             (int)sub.len, sub.s);
                    return;
                }
                int64_t v;
                if (eval(as, &sub, &v) || range(as, &sub, "word", v, 0, 0xFFFFFFFFll, ""))
                    return;
                w.w[k++] = (uint32_t)v;
            }
            if (s < end)
                s++;
        }
    }
    if (k < 4) {
        error_at(as, t[nt - 1].col + (unsigned)t[nt - 1].len,
                 "end of line after %d words, expected 4 words w0, w1, w2, w3", k);
        return;
    }
    emit(as, w);
}

static int parse_mem(const struct tok *t, size_t n, unsigned *mem)
{
    for (unsigned m = 0; m < TPU_MEM_COUNT; m++)
        if (strlen(tpu_mem_name(m)) == n && !memcmp(t->s, tpu_mem_name(m), n)) {
            *mem = m;
            return 0;
        }
    return -1;
}

static void do_mnem(struct as *as, const struct mnem *m, struct tok *t, int nt)
{
    int64_t val[MAX_KEYS] = { 0 };
    unsigned vmem[MAX_KEYS] = { 0 };
    unsigned xs[3] = { 0, 0, 0 }; /* the register of each address slot */
    int seen[MAX_KEYS] = { 0 };
    struct tok keytok[MAX_KEYS];
    int flag = 0, flag_seen = 0, pos_seen = 0, bad = 0;
    struct tok flagtok = t[0];
    unsigned pos = 0;
    int nkeys = 0;
    while (nkeys < MAX_KEYS && m->keys[nkeys].name)
        nkeys++;
    for (int i = 1; i < nt; i++) {
        const struct tok *a = &t[i];
        const char *eq = memchr(a->s, '=', a->len);
        if (eq == NULL) {
            if (m->pos != P_NONE && !pos_seen && i == 1) {
                pos_seen = 1;
                if (m->pos == P_MEM) {
                    if (parse_mem(a, a->len, &pos)) {
                        error_at(as, a->col, "unknown memory '%.*s', expected ub, acc or wmem",
                                 (int)a->len, a->s);
                        bad = 1;
                    }
                } else if (m->pos == P_LEVEL) {
                    int64_t lv;
                    if (eval(as, a, &lv) ||
                        range(as, a, "level", lv, 0, TPU_LOOP_LEVELS - 1, " (a loop level)"))
                        bad = 1;
                    else
                        pos = (unsigned)lv;
                } else if (m->pos == P_XREG) {
                    int xr = xreg_name(a->s, a->len);
                    if (xr < 0) {
                        error_at(as, a->col, "unknown register '%.*s', expected x1 .. x%u",
                                 (int)a->len, a->s, TPU_XREGS - 1u);
                        bad = 1;
                    }
                    pos = xr < 0 ? 0u : (unsigned)xr;
                } else if (m->pos == P_MEM2) {
                    if (parse_mem(a, a->len, &pos) || pos == TPU_MEM_WMEM) {
                        error_at(as, a->col, "%s memory '%.*s' for %s, expected ub or acc",
                                 pos == TPU_MEM_WMEM ? "bad" : "unknown", (int)a->len, a->s,
                                 m->name);
                        bad = 1;
                    }
                } else {
                    unsigned lim = m->pos == P_VOP ? TPU_VOP_COUNT : 4, k;
                    for (k = m->pos == P_VOP ? 0 : 1; k < lim; k++) {
                        const char *nm = m->pos == P_VOP ? tpu_vop_name(k) : tpu_red_name(k);
                        if (tok_is(a, nm))
                            break;
                    }
                    if (k == lim) {
                        error_at(as, a->col, "unknown %s '%.*s', expected %s",
                                 m->pos == P_VOP ? "vop op" : "reduction", (int)a->len, a->s,
                                 m->pos == P_VOP ? "add, sub, mul, max, min, cvt, relu, exp, "
                                                   "tanh, sigmoid, gelu or recip"
                                                 : "sum, max or min");
                        bad = 1;
                    }
                    pos = k;
                }
                continue;
            }
            int f;
            for (f = 0; f < 2; f++)
                if (m->flags[f] && tok_is(a, m->flags[f]))
                    break;
            if (f < 2) {
                if (flag_seen) {
                    error_at(as, a->col, "duplicate flag '%.*s', expected it once", (int)a->len,
                             a->s);
                    bad = 1;
                }
                flag = flag_seen = 1;
                flagtok = *a;
                continue;
            }
            if (nkeys == 0)
                error_at(as, a->col, "trailing '%.*s', expected end of line (%s takes no "
                         "operands)", (int)a->len, a->s, m->name);
            else
                error_at(as, a->col, "unexpected '%.*s', expected key=value", (int)a->len, a->s);
            bad = 1;
            continue;
        }
        size_t kl = (size_t)(eq - a->s);
        struct tok vt = { eq + 1, a->len - kl - 1, a->col + (unsigned)kl + 1 };
        int k;
        for (k = 0; k < nkeys; k++)
            if (strlen(m->keys[k].name) == kl && !memcmp(m->keys[k].name, a->s, kl))
                break;
        if (k == nkeys) {
            char list[160] = "";
            for (int j = 0; j < nkeys; j++) {
                strcat(list, j ? ", " : "");
                strcat(list, m->keys[j].name);
            }
            error_at(as, a->col, "unknown key '%.*s' for %s, expected %s%s", (int)kl, a->s,
                     m->name, nkeys > 1 ? "one of " : "", nkeys ? list : "no operands");
            bad = 1;
            continue;
        }
        if (seen[k]) {
            error_at(as, a->col, "duplicate key '%.*s', expected each key once", (int)kl, a->s);
            bad = 1;
            continue;
        }
        seen[k] = 1;
        keytok[k] = vt;
        if (vt.len == 0) {
            error_at(as, vt.col, "empty value for '%s', expected a value", m->keys[k].name);
            bad = 1;
            continue;
        }
        const char *key = m->keys[k].name;
        switch (m->keys[k].kind) {
        case K_MODE:
            if (tok_is(&vt, "accumulate"))
                val[k] = 1;
            else if (tok_is(&vt, "overwrite"))
                val[k] = 0;
            else if (vt.len == 8 && memcmp(vt.s, "first:l", 7) == 0 && vt.s[7] >= '0' &&
                     vt.s[7] < '0' + TPU_LOOP_LEVELS)
                val[k] = 2 + (vt.s[7] - '0'); /* first:lL: acc_first = 1 + L */
            else {
                error_at(as, vt.col, "acc_mode '%.*s', expected accumulate, overwrite or "
                         "first:l0 .. first:l5", (int)vt.len, vt.s);
                bad = 1;
            }
            break;
        case K_MEMROW: {
            const char *c = memchr(vt.s, ':', vt.len);
            if (c == NULL) {
                error_at(as, vt.col, "'%.*s' for '%s', expected MEM:ROW with MEM ub or acc",
                         (int)vt.len, vt.s, key);
                bad = 1;
                break;
            }
            size_t ml = (size_t)(c - vt.s);
            if (parse_mem(&vt, ml, &vmem[k]) || vmem[k] == TPU_MEM_WMEM) {
                error_at(as, vt.col, "memory '%.*s' for '%s', expected ub or acc", (int)ml, vt.s,
                         key);
                bad = 1;
                break;
            }
            struct tok rt = { c + 1, vt.len - ml - 1, vt.col + (unsigned)ml + 1 };
            if (rt.len == 0) {
                error_at(as, rt.col, "empty row for '%s', expected a row number", key);
                bad = 1;
                break;
            }
            if (eval_x(as, &rt, &val[k], &xs[m->keys[k].xslot - 1]) ||
                range(as, &rt, key, val[k], 0, 0xFFFF, ""))
                bad = 1;
            break;
        }
        case K_U16:
            if (eval_x(as, &vt, &val[k], m->keys[k].xslot ? &xs[m->keys[k].xslot - 1] : NULL) ||
                range(as, &vt, key, val[k], 0, 0xFFFF, ""))
                bad = 1;
            break;
        case K_S32:
            if (eval(as, &vt, &val[k]) ||
                range(as, &vt, key, val[k], INT32_MIN, INT32_MAX, " (a signed stride)"))
                bad = 1;
            break;
        case K_MOD: /* the modulus form: 0 (none) or a power of two 2 .. 2^16 */
            if (eval(as, &vt, &val[k]))
                bad = 1;
            else if (val[k] != 0 && (val[k] < 2 || val[k] > (1 << TPU_STRIDE_MOD_K_MAX) ||
                                     (val[k] & (val[k] - 1)) != 0)) {
                error_at(as, vt.col, "modulus %lld for 'mod', expected 0 (none) or a power of "
                         "two 2 .. %u", (long long)val[k], 1u << TPU_STRIDE_MOD_K_MAX);
                bad = 1;
            }
            break;
        case K_CORE:
            if (eval(as, &vt, &val[k]) ||
                range(as, &vt, key, val[k], 0, (1 << TPU_CORE_ID_BITS) - 1, " (a core id)"))
                bad = 1;
            break;
        case K_U32:
            if (eval_x(as, &vt, &val[k], m->keys[k].xslot ? &xs[m->keys[k].xslot - 1] : NULL) ||
                range(as, &vt, key, val[k], 0, 0xFFFFFFFFll, ""))
                bad = 1;
            break;
        case K_COLS: {
            char why[40];
            snprintf(why, sizeof why, " (--mxu %u)", as->n_mxu);
            if (eval(as, &vt, &val[k]) ||
                range(as, &vt, key, val[k], as->n_mxu ? 1 : 0,
                      as->n_mxu ? as->n_mxu : (1u << TPU_DMA_COLS_BITS) - 1u,
                      as->n_mxu ? why : ""))
                bad = 1;
            break;
        }
        }
    }
    unsigned endcol = t[nt - 1].col + (unsigned)t[nt - 1].len;
    if (m->pos != P_NONE && !pos_seen) {
        error_at(as, nt > 1 ? t[1].col : endcol, "%s after %s, expected %s",
                 nt > 1 ? "operand" : "end of line", m->name,
                 m->pos == P_MEM    ? "a memory ub, acc or wmem first"
                 : m->pos == P_MEM2 ? "a memory ub or acc first"
                 : m->pos == P_LEVEL ? "a loop level 0 .. 5 first"
                 : m->pos == P_XREG  ? "an index register x1 .. x15 first"
                 : m->pos == P_VOP ? "an op first (add, sub, mul, max, min, cvt, relu, exp, tanh, "
                                     "sigmoid, gelu, recip)"
                                   : "a reduction first (sum, max, min)");
        return;
    }
    for (int k = 0; k < nkeys; k++)
        if (m->keys[k].required && !seen[k]) {
            /* b is required for a binary vop only */
            if (m->opcode == TPU_OP_VOP && k == 1)
                continue;
            error_at(as, endcol, "end of line without key '%s' for %s, expected %s=<value>",
                     m->keys[k].name, m->name, m->keys[k].name);
            bad = 1;
        }
    if (m->opcode == TPU_OP_VOP && pos < TPU_VOP_COUNT && !bad) {
        if (tpu_vop_is_binary(pos) && !seen[1]) {
            error_at(as, endcol, "end of line without key 'b' for binary op %s, expected "
                     "b=MEM:ROW", tpu_vop_name(pos));
            bad = 1;
        }
        if (!tpu_vop_is_binary(pos) && seen[1]) {
            error_at(as, keytok[1].col - 2, "key 'b' for unary op %s, expected no b",
                     tpu_vop_name(pos));
            bad = 1;
        }
        if (!tpu_vop_is_binary(pos) && flag_seen) {
            error_at(as, flagtok.col, "flag 'bcast' for unary op %s, expected no bcast",
                     tpu_vop_name(pos));
            bad = 1;
        }
    }
    if (m->opcode == TPU_OP_STRIDE && !bad) {
        int lo = seen[0] || seen[1] || seen[2], hi = seen[3] || seen[4] || seen[5];
        if (seen[6] && (lo || hi)) {
            int k = seen[0] ? 0 : seen[1] ? 1 : seen[2] ? 2 : seen[3] ? 3 : seen[4] ? 4 : 5;
            error_at(as, keytok[k].col - 3, "l%d with mod, expected either mod= (the modulus "
                     "form) or strides l0= .. l5= (one stride instruction each)", k);
            bad = 1;
        } else if (seen[6]) {
            /* the modulus form */
        } else if (lo && hi) {
            int k = seen[3] ? 3 : seen[4] ? 4 : 5;
            error_at(as, keytok[k].col - 3, "l%d with l0, l1 or l2, expected either l0 .. l2 "
                     "or l3 .. l5 (one stride instruction each)", k);
            bad = 1;
        } else if (!lo && !hi) {
            error_at(as, endcol, "end of line without a stride, expected l0= .. l5= or mod=");
            bad = 1;
        }
    }
    if (m->opcode == TPU_OP_MATMUL && flag_seen && seen[3]) {
        error_at(as, flagtok.col, "flag '%.*s' and acc_mode=, expected one of them",
                 (int)flagtok.len, flagtok.s);
        bad = 1;
    }
    if (bad)
        return;
    tpu_dinsn_t d;
    memset(&d, 0, sizeof d);
    d.opcode = m->opcode;
    memcpy(d.xsel, xs, sizeof d.xsel);
    switch (m->opcode) {
    case TPU_OP_LOOP:
        d.level = pos;
        d.n = (unsigned)val[0];
        d.skip = seen[1] ? (unsigned)val[1] : 1u;
        d.body = (unsigned)val[2];
        break;
    case TPU_OP_STRIDE:
        d.xreg = pos;
        if (seen[6]) { /* mod=M: k = log2 M, or 0 */
            d.modform = 1;
            for (int64_t v = val[6]; v > 1; v >>= 1)
                d.modk++;
            break;
        }
        d.group = seen[3] || seen[4] || seen[5] ? 1u : 0u;
        for (unsigned j = 0; j < TPU_STRIDE_GROUP_LEVELS; j++)
            d.s[j] = (int32_t)val[TPU_STRIDE_GROUP_LEVELS * d.group + j];
        break;
    case TPU_OP_DMA_IN:
    case TPU_OP_DMA_OUT:
        d.mem = pos;
        d.row = (unsigned)val[0];
        d.n = (unsigned)val[1];
        d.cols = (unsigned)val[2];
        d.addr = (uint32_t)val[3];
        if (seen[4]) {
            d.stride = (uint32_t)val[4];
        } else {
            uint64_t s = (uint64_t)val[2] * tpu_mem_elem_bytes(pos);
            d.stride = (uint32_t)s;
        }
        break;
    case TPU_OP_LW:
        d.w_row = (unsigned)val[0];
        d.transpose = (unsigned)flag;
        break;
    case TPU_OP_MATMUL:
        d.ub_row = (unsigned)val[0];
        d.acc_row = (unsigned)val[1];
        d.n = (unsigned)val[2];
        if (val[3] >= 2) /* first:lL (with the flag too, refused above) */
            d.acc_first = (unsigned)val[3] - 1;
        else
            d.accumulate = flag_seen ? 1u : (unsigned)val[3];
        break;
    case TPU_OP_VOP:
        d.vop = pos;
        d.a_mem = vmem[0];
        d.a_row = (unsigned)val[0];
        d.b_mem = vmem[1];
        d.b_row = (unsigned)val[1];
        d.bcast = (unsigned)flag;
        d.d_mem = vmem[2];
        d.d_row = (unsigned)val[2];
        d.n = (unsigned)val[3];
        break;
    case TPU_OP_VRED:
    case TPU_OP_SOFTMAX:
        d.red = pos;
        d.src_mem = vmem[0];
        d.src_row = (unsigned)val[0];
        d.d_mem = vmem[1];
        d.dst_row = (unsigned)val[1];
        d.n = (unsigned)val[2];
        d.length = (unsigned)val[3];
        d.chunk_stride = (unsigned)val[4];
        d.row_stride = (unsigned)val[5];
        break;
    case TPU_OP_SEND:
    case TPU_OP_RECV:
    case TPU_OP_BCAST:
        d.mem = pos;
        d.row = (unsigned)val[0];
        d.n = (unsigned)val[1];
        d.peer = (unsigned)val[2];
        break;
    case TPU_OP_ALLREDUCE:
        d.mem = pos;
        d.row = (unsigned)val[0];
        d.n = (unsigned)val[1];
        d.ring = (unsigned)flag;
        break;
    default:
        break;
    }
    emit(as, tpu_insn_encode(&d));
}

/* internal: add a name with a value (a .equ, or a label of line `line`). */
static int add_equ(struct as *as, const struct tok *t, int64_t v, unsigned line)
{
    if (as->nequ == as->capequ) {
        size_t c = as->capequ ? as->capequ * 2 : 16;
        struct equ *p = realloc(as->equs, c * sizeof *p);
        if (p == NULL) {
            as->oom = 1;
            return -1;
        }
        as->equs = p;
        as->capequ = c;
    }
    char *name = malloc(t->len + 1);
    if (name == NULL) {
        as->oom = 1;
        return -1;
    }
    memcpy(name, t->s, t->len);
    name[t->len] = 0;
    as->equs[as->nequ].name = name;
    as->equs[as->nequ].value = v;
    as->equs[as->nequ].line = line;
    as->nequ++;
    return 0;
}

/* internal: the first token of a line and whether it is a label `NAME:`. */
static size_t first_token(const char *s, size_t n, struct tok *t)
{
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
        i++;
    size_t b = i;
    while (i < n && s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '#' && s[i] != ';')
        i++;
    t->s = s + b;
    t->len = i - b;
    t->col = (unsigned)b + 1;
    return i;
}

/* internal: pass 1: every label's value is the index of the instruction it names (the next
   instruction line), so a loop can name a body that follows it. */
static void scan_label(struct as *as, const char *s, size_t n)
{
    struct tok t;
    size_t i = first_token(s, n, &t);
    if (t.len > 1 && t.s[t.len - 1] == ':') {
        struct tok name = { t.s, t.len - 1, t.col };
        if (!valid_name(&name) || xreg_name(name.s, name.len) >= 0)
            error_at(as, t.col, "bad label '%.*s', expected a letter or _ then letters, digits, "
                     "_ (x0 .. x15 are the index registers)", (int)name.len, name.s);
        else if (find_equ(as, name.s, name.len) != NULL)
            error_at(as, t.col, "duplicate label '%.*s', expected each name defined once",
                     (int)name.len, name.s);
        else
            add_equ(as, &name, (int64_t)as->count, as->line);
        first_token(s + i, n - i, &t);
    }
    if (t.len > 0 && !tok_is(&t, ".equ"))
        as->count++; /* an instruction line (or an error pass 2 reports) */
}

static void do_line(struct as *as, const char *s, size_t n)
{
    struct tok t[MAX_TOKENS];
    int nt = 0;
    size_t i = 0;
    while (i < n) {
        while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
            i++;
        if (i >= n || s[i] == '#' || s[i] == ';')
            break;
        size_t b = i;
        while (i < n && s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '#' &&
               s[i] != ';')
            i++;
        if (nt == MAX_TOKENS) {
            error_at(as, (unsigned)b + 1, "more than %d operands, expected fewer", MAX_TOKENS - 1);
            return;
        }
        t[nt].s = s + b;
        t[nt].len = i - b;
        t[nt].col = (unsigned)b + 1;
        nt++;
    }
    if (nt > 0 && t[0].len > 1 && t[0].s[t[0].len - 1] == ':') { /* a label (pass 1) */
        memmove(t, t + 1, sizeof t[0] * (size_t)(nt - 1));
        nt--;
    }
    if (nt == 0)
        return;
    if (tok_is(&t[0], ".equ")) {
        do_equ(as, t, nt);
        return;
    }
    if (tok_is(&t[0], ".insn")) {
        do_insn(as, t, nt);
        return;
    }
    for (size_t k = 0; k < NMNEM; k++)
        if (tok_is(&t[0], mnems[k].name)) {
            do_mnem(as, &mnems[k], t, nt);
            return;
        }
    error_at(as, t[0].col, "unknown mnemonic '%.*s', expected nop, sync, halt, loop, stride, "
             "dma_in, dma_out, lw, matmul, vop, vred, softmax, send, recv, bcast, barrier, "
             "allreduce, .equ, .insn or a label NAME:", (int)t[0].len, t[0].s);
}

int tpu_asm_n(const char *src, const char *filename, unsigned n_mxu, tpu_insn_t **out,
              size_t *count, char **errors)
{
    return tpu_asm_len(src, strlen(src), filename, n_mxu, out, count, errors);
}

int tpu_asm_len(const char *src, size_t len, const char *filename, unsigned n_mxu,
                tpu_insn_t **out, size_t *count, char **errors)
{
    struct as as;
    memset(&as, 0, sizeof as);
    as.file = filename ? filename : "<input>";
    as.n_mxu = n_mxu;
    const char *p = src, *end = src + len;
    for (int pass = 1; pass <= 2; pass++) {
    p = src;
    as.line = 0;
    as.count = 0;
    while (p < end && as.nerr <= TPU_ASM_MAX_ERRORS && !as.oom) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        size_t n = e ? (size_t)(e - p) : (size_t)(end - p);
        const char *z = memchr(p, 0, n);
        as.line++;
        if (z != NULL) { /* a NUL byte: not text; the line is not assembled */
            if (pass == 2)
                error_at(&as, (unsigned)(z - p) + 1u, "NUL byte, expected text");
        } else if (pass == 1) {
            scan_label(&as, p, n);
        } else {
            do_line(&as, p, n);
        }
        p += n;
        if (p < end && *p == '\n')
            p++;
    }
    if (pass == 1 && as.nerr)
        break; /* bad labels: pass 2 would only repeat what follows from them */
    }
    if (as.nerr > TPU_ASM_MAX_ERRORS) {
        const char *m = "too many errors, stopping\n";
        char head[256];
        snprintf(head, sizeof head, "%s:%u: error: ", as.file, as.line);
        sb_add(&as.errs, head, strlen(head));
        sb_add(&as.errs, m, strlen(m));
    }
    for (size_t i = 0; i < as.nequ; i++)
        free(as.equs[i].name);
    free(as.equs);
    if (as.oom || as.errs.oom) {
        free(as.prog);
        free(as.errs.p);
        *out = NULL;
        *count = 0;
        if (errors)
            *errors = NULL;
        return -1;
    }
    if (as.errs.p == NULL)
        sb_add(&as.errs, "", 0);
    if (errors)
        *errors = as.errs.p;
    else
        free(as.errs.p);
    if (as.nerr) {
        free(as.prog);
        *out = NULL;
        *count = 0;
        return as.nerr;
    }
    if (as.prog == NULL)
        as.prog = malloc(sizeof *as.prog);
    *out = as.prog;
    *count = as.count;
    return 0;
}

int tpu_asm(const char *src, const char *filename, tpu_insn_t **out, size_t *count,
            char **errors)
{
    return tpu_asm_n(src, filename, 0, out, count, errors);
}
