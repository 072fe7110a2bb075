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

void tpu_seq_resolve(const tpu_seq_t *s, tpu_dinsn_t *d)
{
    uint32_t x[3];
    for (unsigned i = 0; i < 3; i++)
        x[i] = tpu_seq_xval(s, d->xsel[i]);
    switch (d->opcode) {
    case TPU_OP_DMA_IN:
    case TPU_OP_DMA_OUT:
        d->addr += x[0];
        d->row = row_plus(d->row, x[1]);
        break;
    case TPU_OP_LW:
        d->w_row = row_plus(d->w_row, x[0]);
        break;
    case TPU_OP_MATMUL:
        d->ub_row = row_plus(d->ub_row, x[0]);
        d->acc_row = row_plus(d->acc_row, x[1]);
        if (d->acc_first) { /* overwrite in the first iteration of level L and those inside */
            unsigned any = 0;
            for (unsigned l = d->acc_first - 1; l < TPU_LOOP_LEVELS; l++)
                any |= s->idx[l] != 0;
            d->accumulate = any;
            d->acc_first = 0;
        }
        break;
    case TPU_OP_VOP:
        d->a_row = row_plus(d->a_row, x[0]);
        d->b_row = row_plus(d->b_row, x[1]);
        d->d_row = row_plus(d->d_row, x[2]);
        break;
    case TPU_OP_VRED:
    case TPU_OP_SOFTMAX:
        d->src_row = row_plus(d->src_row, x[0]);
        d->dst_row = row_plus(d->dst_row, x[1]);
        break;
    case TPU_OP_SEND:
    case TPU_OP_RECV:
    case TPU_OP_BCAST:
    case TPU_OP_ALLREDUCE:
        d->row = row_plus(d->row, x[0]);
        break;
    default:
        break;
    }
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
