/* SPDX-License-Identifier: Apache-2.0 */
/* The sequencer's loops and affine operands (docs/isa.md "Loops"): which instruction comes
   next, and what each address operand is when its instruction dispatches. The C model, the
   assembler's --check, tpu-mkprog and the compiler's loop pass all run programs through these
   functions; gen's tpu_core_seq does the same in hardware. */
#include <stdio.h>
#include <string.h>

#include "tpu/isa.h"

void tpu_seq_reset(tpu_seq_t *s) { memset(s, 0, sizeof *s); }

uint32_t tpu_seq_xval(const tpu_seq_t *s, unsigned r)
{
    uint32_t v = 0;
    if (r == 0 || r >= TPU_XREGS)
        return 0;
    for (unsigned l = 0; l < TPU_LOOP_LEVELS; l++)
        v += s->part[r][l];
    return v;
}

/* internal: a 16-bit row field plus x (signed): the row, or 0xFFFFFFFF outside 0 .. 65535. */
static unsigned row_plus(unsigned row, uint32_t x)
{
    int64_t v = (int64_t)row + (int64_t)(int32_t)x;
    return v < 0 || v > 0xFFFF ? 0xFFFFFFFFu : (unsigned)v;
}

/* internal: the mask of register r's modulus 2^k (k = modk[r]), or 0 for none */
static uint32_t mod_mask(const tpu_seq_t *s, unsigned r)
{
    unsigned k = r > 0 && r < TPU_XREGS ? s->modk[r] : 0u;
    return k ? (k >= 32 ? 0xFFFFFFFFu : (1u << k) - 1u) : 0u;
}

/* internal: an operand (row or host address) plus x_r: with a modulus, the 32-bit sum masked
   with 2^k - 1; else a row as row_plus, a host address modulo 2^32 */
static unsigned opnd_plus(const tpu_seq_t *s, unsigned r, uint32_t v, uint32_t x, int row)
{
    uint32_t m = mod_mask(s, r);
    if (m)
        return (v + x) & m;
    return row ? row_plus(v, x) : v + x;
}

void tpu_seq_resolve(const tpu_seq_t *s, tpu_dinsn_t *d)
{
    uint32_t x[3];
    for (unsigned i = 0; i < 3; i++)
        x[i] = tpu_seq_xval(s, d->xsel[i]);
/* a row operand in slot i */
#define ROW(v, i) opnd_plus(s, d->xsel[i], (v), x[i], 1)
    switch (d->opcode) {
    case TPU_OP_DMA_IN:
    case TPU_OP_DMA_OUT:
        d->addr = opnd_plus(s, d->xsel[0], d->addr, x[0], 0);
        d->row = ROW(d->row, 1);
        break;
    case TPU_OP_LW:
        d->w_row = ROW(d->w_row, 0);
        break;
    case TPU_OP_MATMUL:
        d->ub_row = ROW(d->ub_row, 0);
        d->acc_row = ROW(d->acc_row, 1);
        if (d->acc_first) { /* overwrite in the first iteration of level L and those inside */
            unsigned any = 0;
            for (unsigned l = d->acc_first - 1; l < TPU_LOOP_LEVELS; l++)
                any |= s->idx[l] != 0;
            d->accumulate = any;
            d->acc_first = 0;
        }
        break;
    case TPU_OP_VOP:
        d->a_row = ROW(d->a_row, 0);
        d->b_row = ROW(d->b_row, 1);
        d->d_row = ROW(d->d_row, 2);
        break;
    case TPU_OP_VRED:
    case TPU_OP_SOFTMAX:
        d->src_row = ROW(d->src_row, 0);
        d->dst_row = ROW(d->dst_row, 1);
        break;
    case TPU_OP_SEND:
    case TPU_OP_RECV:
    case TPU_OP_BCAST:
    case TPU_OP_ALLREDUCE:
        d->row = ROW(d->row, 0);
        break;
    default:
        break;
    }
#undef ROW
    d->xsel[0] = d->xsel[1] = d->xsel[2] = 0;
}

int tpu_seq_check(const tpu_seq_t *s, const tpu_dinsn_t *d, uint32_t pc, unsigned imem_insns)
{
    if (d->opcode != TPU_OP_LOOP)
        return 0;
    uint64_t first = (uint64_t)pc + d->skip, last = first + d->body - 1;
    if (last >= imem_insns)
        return TPU_ERR_LOOP;
    for (unsigned k = 0; k < TPU_LOOP_LEVELS; k++) {
        if (k < d->level) {
            /* every outer level armed, its body holding this one */
            if (!s->armed[k] || first < s->first[k] || last > s->last[k])
                return TPU_ERR_LOOP;
        } else if (s->armed[k] && pc >= s->first[k] && pc <= s->last[k]) {
            /* re-arming a level (or disarming an inner one) from inside its body */
            return TPU_ERR_LOOP;
        }
    }
    return 0;
}

/* internal: level l starts over at index 0 (armed, completed or disarmed). */
static void level_zero(tpu_seq_t *s, unsigned l)
{
    s->idx[l] = 0;
    for (unsigned r = 0; r < TPU_XREGS; r++)
        s->part[r][l] = 0;
}

uint32_t tpu_seq_step(tpu_seq_t *s, const tpu_dinsn_t *d, uint32_t pc)
{
    if (d->opcode == TPU_OP_LOOP) {
        unsigned l = d->level; /* < TPU_LOOP_LEVELS: tpu_insn_check refused the others */
        s->armed[l] = 1;
        s->first[l] = pc + d->skip;
        s->last[l] = pc + d->skip + d->body - 1;
        s->count[l] = d->n;
        level_zero(s, l);
        for (unsigned k = l + 1; k < TPU_LOOP_LEVELS; k++) {
            s->armed[k] = 0;
            level_zero(s, k);
        }
    } else if (d->opcode == TPU_OP_STRIDE && d->modform && d->xreg > 0 && d->xreg < TPU_XREGS) {
        s->modk[d->xreg] = (uint8_t)d->modk; /* the modulus only: no part, no stride */
    } else if (d->opcode == TPU_OP_STRIDE && d->xreg > 0 && d->xreg < TPU_XREGS) {
        for (unsigned j = 0; j < TPU_STRIDE_GROUP_LEVELS; j++) {
            unsigned l = TPU_STRIDE_GROUP_LEVELS * d->group + j;
            if (l < TPU_LOOP_LEVELS)
                s->stride[d->xreg][l] = (uint32_t)d->s[j];
        }
    }
    /* the innermost level whose body ends here and has iterations left jumps back; the
       levels inside it that also end here complete */
    for (unsigned k = TPU_LOOP_LEVELS; k-- > 0;) {
        if (!s->armed[k] || s->last[k] != pc)
            continue;
        if (s->idx[k] + 1 < s->count[k]) {
            s->idx[k]++;
            for (unsigned r = 1; r < TPU_XREGS; r++)
                s->part[r][k] += s->stride[r][k];
            return s->first[k];
        }
        level_zero(s, k);
    }
    return pc + 1;
}

void tpu_seq_iter_text(const tpu_seq_t *s, char *buf, size_t len)
{
    size_t k = 0;
    if (len)
        buf[0] = 0;
    for (unsigned l = 0; l < TPU_LOOP_LEVELS && k < len; l++) {
        int w = snprintf(buf + k, len - k, l ? ".%u" : "%u", (unsigned)s->idx[l]);
        if (w < 0)
            break;
        k += (size_t)w;
    }
}
