/* SPDX-License-Identifier: Apache-2.0 */
/* The VPU unit: vop, vred and softmax over rows of N lanes (docs/isa.md "Semantics") with the
   VPU's numerics (tpu/vpu.h), and their timing ("Timing"): one row read per cycle, results
   written TPU_VPU_LATENCY + 1 cycles after their read (reductions: the reduction latency
   26 + ceil(log2 N) + 1, plus 1), each pass of a softmax starting the cycle after the result
   it needs. */
#include <string.h>
#include "core_internal.h"
#include "vpu_fast.h"
#include "tpu/numerics.h"
#include "tpu/vpu.h"

/* vop's op codes are vpu_op_t's (tpu/isa.h) */
_Static_assert((int)TPU_VOP_LOG == (int)VPU_OP_LOG && (int)TPU_VOP_RSQRT == (int)VPU_OP_RSQRT &&
                   (int)TPU_VOP_ERF == (int)VPU_OP_ERF &&
                   (int)TPU_VOP_COUNT == (int)VPU_OP_COUNT,
               "vop op codes must equal vpu_op_t");

static vpu_fmt_t vpu_fmt(unsigned mem)
{
    return mem == TPU_MEM_UB ? VPU_FMT_BF16 : VPU_FMT_FP32;
}

static uint64_t vop_exec(tpu_core_t *c, const tpu_dinsn_t *d, uint64_t t)
{
    unsigned n = c->n;
    int bin = tpu_vop_is_binary(d->vop);
    uint32_t a[256], b[256], y[256];
    /* every operand row written already and no trace (the usual case): the whole instruction
       in one call where the host has one (the same rows in the same order as the loop below,
       each written in place), the rows marked written at once */
    if (!c->integer_mx && c->trace == NULL && d->n > 0 &&
        (d->d_mem == TPU_MEM_ACC || d->d_mem == TPU_MEM_UB) &&
        memchr(c->written[d->a_mem] + d->a_row, 0, d->n) == NULL &&
        (!bin || memchr(c->written[d->b_mem] + d->b_row, 0, d->bcast ? 1u : d->n) == NULL)) {
        const uint32_t *ar = c->mem[d->a_mem] + (size_t)d->a_row * n;
        uint32_t *dst = c->mem[d->d_mem] + (size_t)d->d_row * n;
        int done = bin ? vpu_rows_binary_fast((vpu_op_t)d->vop, d->n, n, vpu_fmt(d->a_mem), ar, n,
                                              vpu_fmt(d->b_mem),
                                              c->mem[d->b_mem] + (size_t)d->b_row * n,
                                              d->bcast ? 0u : n, vpu_fmt(d->d_mem), dst, n)
                       : vpu_rows_unary_fast((vpu_op_t)d->vop, d->n, n, vpu_fmt(d->a_mem), ar, n,
                                             vpu_fmt(d->d_mem), dst, n);
        if (done) {
            memset(c->written[d->d_mem] + d->d_row, 1, d->n);
            c->res->rows_written[d->d_mem] += d->n;
        }
        if (done)
            goto timing;
    }
    for (unsigned r = 0; r < d->n; r++) {
        const uint32_t *ar = core_read_row(c, d->a_mem, d->a_row + r);
        if (!c->integer_mx && (d->d_mem == TPU_MEM_ACC || d->d_mem == TPU_MEM_UB)) {
            /* the fast paths read their operands whole before they write, element i of the
               result depends on element i of the operands only, and their results are the
               stored values (bf16 in 16 bits): the destination row is written in place, even
               when it is an operand's row */
            uint32_t *dst = core_write_dst(c, d->d_mem, d->d_row + r);
            int done = bin ? vpu_vec_binary_fast((vpu_op_t)d->vop, n, vpu_fmt(d->a_mem), ar,
                                                 vpu_fmt(d->b_mem),
                                                 core_read_row(c, d->b_mem, d->b_row + (d->bcast ? 0u : r)),
                                                 vpu_fmt(d->d_mem), dst)
                           : vpu_vec_unary_fast((vpu_op_t)d->vop, n, vpu_fmt(d->a_mem), ar,
                                                vpu_fmt(d->d_mem), dst);
            if (done) {
                core_write_done(c, d->d_mem, d->d_row + r);
                continue;
            }
        }
        memcpy(a, ar, sizeof a[0] * n);
        if (bin) {
            memcpy(b, core_read_row(c, d->b_mem, d->b_row + (d->bcast ? 0u : r)),
                   sizeof b[0] * n);
            if (c->integer_mx ||
                !vpu_vec_binary_fast((vpu_op_t)d->vop, n, vpu_fmt(d->a_mem), a,
                                     vpu_fmt(d->b_mem), b, vpu_fmt(d->d_mem), y))
                vpu_vec_binary((vpu_op_t)d->vop, n, vpu_fmt(d->a_mem), a, vpu_fmt(d->b_mem), b,
                               vpu_fmt(d->d_mem), y);
        } else {
            vpu_vec_unary((vpu_op_t)d->vop, n, vpu_fmt(d->a_mem), a, vpu_fmt(d->d_mem), y);
        }
        core_write_row(c, d->d_mem, d->d_row + r, y);
    }
timing:;
    uint64_t reads = d->n;
    if (bin && d->bcast)
        reads = (uint64_t)d->n + 1u;
    else if (bin && d->a_mem == d->b_mem)
        reads = 2u * (uint64_t)d->n;
    return t + reads + c->vpu_lat + 1u;
}

/* internal: row of chunk ch of logical row g (src and softmax dst use the same strides) */
static unsigned chunk_row(const tpu_dinsn_t *d, unsigned base, unsigned g, unsigned ch)
{
    return base + g * d->row_stride + ch * d->chunk_stride;
}

static uint64_t vred_exec(tpu_core_t *c, const tpu_dinsn_t *d, uint64_t t)
{
    unsigned n = c->n, chunks = core_ceil_div(d->length, n);
    vpu_op_t op = d->red == TPU_RED_SUM ? VPU_OP_ADD : d->red == TPU_RED_MAX ? VPU_OP_MAX
                                                                               : VPU_OP_MIN;
    uint32_t *x = c->lrow[0]; /* chunks * n <= 65535 + n - 1 words */
    uint32_t packed[256];
    memset(packed, 0, sizeof packed);
    for (unsigned g = 0; g < d->n; g++) {
        for (unsigned ch = 0; ch < chunks; ch++)
            memcpy(x + (size_t)ch * n, core_read_row(c, d->src_mem, chunk_row(d, d->src_row, g, ch)),
                   sizeof *x * n);
        fp32_t res;
        vpu_reduce(op, d->length, vpu_fmt(d->src_mem), x, n, &res);
        packed[g % n] = vpu_store(vpu_fmt(d->d_mem), res);
        if (g % n == n - 1u || g == d->n - 1u) {
            core_write_row(c, d->d_mem, d->dst_row + g / n, packed);
            memset(packed, 0, sizeof packed);
        }
    }
    /* reads of every chunk back to back; the last result in read + RED_LAT + 1 */
    return t + (uint64_t)d->n * chunks + c->vpu_red_lat + 1u;
}

static uint64_t softmax_exec(tpu_core_t *c, const tpu_dinsn_t *d, uint64_t t)
{
    unsigned n = c->n, chunks = core_ceil_div(d->length, n);
    size_t words = (size_t)chunks * n;
    uint32_t *x = c->lrow[0], *e = c->lrow[1]; /* words <= 65535 + n - 1 */
    uint32_t y[256];
    for (unsigned g = 0; g < d->n; g++) {
        for (unsigned ch = 0; ch < chunks; ch++)
            memcpy(x + (size_t)ch * n, core_read_row(c, TPU_MEM_ACC, chunk_row(d, d->src_row, g, ch)),
                   sizeof *x * n);
        fp32_t m, s;
        vpu_reduce(VPU_OP_MAX, d->length, VPU_FMT_FP32, x, n, &m);
        for (size_t i = 0; i < words; i++)
            e[i] = vpu_exp(fp32_sub(fp32_from_bits(x[i]), m)).v;
        for (unsigned ch = 0; ch < chunks; ch++)
            core_write_row(c, TPU_MEM_ACC, chunk_row(d, d->src_row, g, ch), e + (size_t)ch * n);
        vpu_reduce(VPU_OP_ADD, d->length, VPU_FMT_FP32, e, n, &s);
        fp32_t r = vpu_recip(s);
        for (unsigned ch = 0; ch < chunks; ch++) {
            for (unsigned i = 0; i < n; i++)
                y[i] = vpu_store(vpu_fmt(d->d_mem),
                                 fp32_mul(fp32_from_bits(e[(size_t)ch * n + i]), r));
            core_write_row(c, d->d_mem, chunk_row(d, d->dst_row, g, ch), y);
        }
    }
    /* per logical row: pass 1 (max) reads C chunks; pass 2 (exp, sum) starts the cycle after
       the max is valid; the recip's one-lane vector the cycle after the sum is valid; pass 3
       (scale) the cycle after the recip is valid; the next logical row's pass 1 the cycle
       after the last pass-3 read */
    uint64_t a = t + 1u, last = t;
    for (unsigned g = 0; g < d->n; g++) {
        uint64_t r2 = a + chunks + c->vpu_red_lat + 1u;
        uint64_t p = r2 + chunks + c->vpu_red_lat + 1u;
        uint64_t r4 = p + c->vpu_lat + 1u;
        last = r4 + chunks - 1u + c->vpu_lat + 1u;
        a = r4 + chunks;
    }
    return last;
}

uint64_t core_vpu_exec(tpu_core_t *c, const tpu_dinsn_t *d, uint64_t t)
{
    switch (d->opcode) {
    case TPU_OP_VOP: return vop_exec(c, d, t);
    case TPU_OP_VRED: return vred_exec(c, d, t);
    default: return softmax_exec(c, d, t);
    }
}
