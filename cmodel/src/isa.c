/* SPDX-License-Identifier: Apache-2.0 */
/* The core's instruction encoding, dispatch checks, hazard footprints and disassembler
   (docs/isa.md "Instruction format", "Errors", "Timing"). */
#include <stdio.h>
#include <string.h>

#include "tpu/config.h"
#include "tpu/isa.h"

static const char *const vop_names[TPU_VOP_COUNT] = {
    "add", "sub", "mul", "max", "min", "cvt", "relu", "exp", "tanh", "sigmoid", "gelu", "recip",
    "log", "rsqrt", "erf"
};
static const char *const red_names[4] = { NULL, "sum", "max", "min" };
static const char *const mem_names[TPU_MEM_COUNT] = { "ub", "acc", "wmem" };

tpu_core_geom_t tpu_core_geom_default(unsigned n)
{
    tpu_core_geom_t g;
    g.n = n;
    g.ub_rows = tpu_cfg_ub_rows(n, 0); /* the defaults of tpu/config.h */
    g.acc_rows = tpu_cfg_acc_rows(n, 0);
    g.wmem_rows = tpu_cfg_wmem_rows(n, 0);
    g.imem_insns = TPU_CFG_IMEM_INSNS_DEFAULT;
    return g;
}

int tpu_vop_is_binary(unsigned op) { return op <= TPU_VOP_MIN; }

const char *tpu_vop_name(unsigned op) { return op < TPU_VOP_COUNT ? vop_names[op] : NULL; }

const char *tpu_red_name(unsigned red) { return red < 4 ? red_names[red] : NULL; }

const char *tpu_mem_name(unsigned mem) { return mem < TPU_MEM_COUNT ? mem_names[mem] : NULL; }

const char *tpu_opcode_name(unsigned opcode)
{
    switch (opcode) {
    case TPU_OP_NOP: return "nop";
    case TPU_OP_SYNC: return "sync";
    case TPU_OP_HALT: return "halt";
    case TPU_OP_LOOP: return "loop";
    case TPU_OP_STRIDE: return "stride";
    case TPU_OP_DMA_IN: return "dma_in";
    case TPU_OP_DMA_OUT: return "dma_out";
    case TPU_OP_LW: return "lw";
    case TPU_OP_MATMUL: return "matmul";
    case TPU_OP_VOP: return "vop";
    case TPU_OP_VRED: return "vred";
    case TPU_OP_SOFTMAX: return "softmax";
    case TPU_OP_SEND: return "send";
    case TPU_OP_RECV: return "recv";
    case TPU_OP_BCAST: return "bcast";
    case TPU_OP_BARRIER: return "barrier";
    case TPU_OP_ALLREDUCE: return "allreduce";
    default: return NULL;
    }
}

int tpu_opcode_is_collective(unsigned opcode)
{
    return opcode >= TPU_OP_SEND && opcode <= TPU_OP_ALLREDUCE;
}

tpu_unit_t tpu_opcode_unit(unsigned opcode)
{
    switch (opcode) {
    case TPU_OP_DMA_IN:
    case TPU_OP_DMA_OUT: return TPU_UNIT_DMA;
    case TPU_OP_LW: return TPU_UNIT_WL;
    case TPU_OP_MATMUL: return TPU_UNIT_MX;
    case TPU_OP_VOP:
    case TPU_OP_VRED:
    case TPU_OP_SOFTMAX: return TPU_UNIT_VPU;
    default: return TPU_UNIT_NONE;
    }
}

unsigned tpu_mem_elem_bytes(unsigned mem) { return mem == TPU_MEM_ACC ? 4u : 2u; }

/* a stride's modulus-form bit within flags (w0 bit TPU_W0_STRIDE_MOD_FORM_LSB) */
#define STRIDE_MOD_FLAG (TPU_W0_STRIDE_MOD_FORM_LSB - TPU_W0_FLAGS_LSB)

/* internal: the w3 register selectors of slots 0 .. k-1, and the mask of those bits. */
static void w3_xsel(tpu_dinsn_t *d, uint32_t w3, unsigned k)
{
    static const unsigned lsb[3] = { TPU_XSEL_W3_LSB0, TPU_XSEL_W3_LSB1, TPU_XSEL_W3_LSB2 };
    for (unsigned i = 0; i < k; i++)
        d->xsel[i] = (w3 >> lsb[i]) & (TPU_XREGS - 1u);
}

static uint32_t w3_xsel_mask(unsigned k)
{
    static const unsigned lsb[3] = { TPU_XSEL_W3_LSB0, TPU_XSEL_W3_LSB1, TPU_XSEL_W3_LSB2 };
    uint32_t m = 0;
    for (unsigned i = 0; i < k; i++)
        m |= (uint32_t)(TPU_XREGS - 1u) << lsb[i];
    return m;
}

static uint32_t w3_xsel_encode(const tpu_dinsn_t *d, unsigned k)
{
    static const unsigned lsb[3] = { TPU_XSEL_W3_LSB0, TPU_XSEL_W3_LSB1, TPU_XSEL_W3_LSB2 };
    uint32_t w = 0;
    for (unsigned i = 0; i < k; i++)
        w |= (uint32_t)(d->xsel[i] & (TPU_XREGS - 1u)) << lsb[i];
    return w;
}

void tpu_insn_decode(tpu_insn_t raw, tpu_dinsn_t *d)
{
    uint32_t w0 = raw.w[0], w1 = raw.w[1], w2 = raw.w[2], w3 = raw.w[3];
    memset(d, 0, sizeof *d);
    d->opcode = w0 & 0xFFu;
    d->flags = (w0 >> 8) & 0xFFu;
    d->n = w0 >> 16;
    unsigned f = d->flags;
    switch (d->opcode) {
    case TPU_OP_NOP:
    case TPU_OP_SYNC:
    case TPU_OP_HALT:
        d->reserved = (f | d->n | w1 | w2 | w3) != 0;
        break;
    case TPU_OP_LOOP:
        d->level = f & 7u;
        d->skip = w1 & 0xFFFFu;
        d->body = w2 & 0xFFFFu;
        d->reserved = ((f & ~7u) | (w1 >> 16) | (w2 >> 16) | w3) != 0 ||
                      d->level >= TPU_LOOP_LEVELS;
        break;
    case TPU_OP_STRIDE:
        d->xreg = (f & 7u) | ((f >> TPU_STRIDE_XREG_HI) & 1u) << 3;
        d->group = (f >> 3) & 1u;
        d->modform = (f >> STRIDE_MOD_FLAG) & 1u;
        if (d->modform) {
            /* the modulus form: k in w1[4:0] (1 .. 16; 17 .. 31 reserved); flags[3], w1's
               other bits, w2, w3 and n are reserved */
            d->modk = w1 & ((1u << TPU_STRIDE_MOD_K_BITS) - 1u);
            d->reserved = ((f & ~63u) | d->group | d->n | (w1 >> TPU_STRIDE_MOD_K_BITS) | w2 |
                           w3) != 0 || d->modk > TPU_STRIDE_MOD_K_MAX;
            break;
        }
        d->s[0] = (int32_t)w1;
        d->s[1] = (int32_t)w2;
        d->s[2] = (int32_t)w3;
        d->reserved = ((f & ~31u) | d->n) != 0 ||
                      TPU_STRIDE_GROUP_LEVELS * d->group >= TPU_LOOP_LEVELS;
        break;
    case TPU_OP_DMA_IN:
    case TPU_OP_DMA_OUT:
        d->mem = f & 3u;
        d->addr = w1;
        d->row = w2 & 0xFFFFu;
        d->cols = (w2 >> 16) & ((1u << TPU_DMA_COLS_BITS) - 1u);
        d->stride = w3;
        d->xsel[0] = ((f >> 2) & 7u) | ((w2 >> TPU_XSEL_DMA_ADDR_HI) & 1u) << 3;
        d->xsel[1] = ((f >> 5) & 7u) | ((w2 >> TPU_XSEL_DMA_ROW_HI) & 1u) << 3;
        break;
    case TPU_OP_LW:
        d->w_row = w1 & 0xFFFFu;
        d->transpose = f & 1u;
        w3_xsel(d, w3, 1);
        d->reserved = ((f & ~1u) | d->n | (w1 >> 16) | w2 | (w3 & ~w3_xsel_mask(1))) != 0;
        break;
    case TPU_OP_MATMUL:
        d->accumulate = f & 1u;
        d->acc_first = (f >> 1) & 7u;
        d->ub_row = w1 & 0xFFFFu;
        d->acc_row = w2 & 0xFFFFu;
        w3_xsel(d, w3, 2);
        /* acc_first names a level 0 .. TPU_LOOP_LEVELS - 1 and leaves flags[0] 0 */
        d->reserved = ((f & ~15u) | (w1 >> 16) | (w2 >> 16) | (w3 & ~w3_xsel_mask(2))) != 0 ||
                      d->acc_first > TPU_LOOP_LEVELS || (d->acc_first && d->accumulate);
        break;
    case TPU_OP_VOP:
        d->vop = f & 15u;
        d->a_mem = (f >> 4) & 1u;
        d->b_mem = (f >> 5) & 1u;
        d->d_mem = (f >> 6) & 1u;
        d->bcast = (f >> 7) & 1u;
        d->a_row = w1 & 0xFFFFu;
        d->b_row = w1 >> 16;
        d->d_row = w2 & 0xFFFFu;
        w3_xsel(d, w3, 3);
        d->reserved = ((w2 >> 16) | (w3 & ~w3_xsel_mask(3))) != 0;
        if (d->vop >= TPU_VOP_CVT && d->vop < TPU_VOP_COUNT &&
            (d->b_mem | d->bcast | d->b_row | d->xsel[1]) != 0)
            d->reserved = 1;
        break;
    case TPU_OP_VRED:
    case TPU_OP_SOFTMAX:
        d->red = d->opcode == TPU_OP_VRED ? (f & 3u) : 0;
        d->src_mem = (f >> 4) & 1u;
        d->d_mem = (f >> 6) & 1u;
        d->src_row = w1 & 0xFFFFu;
        d->chunk_stride = w1 >> 16;
        d->dst_row = w2 & 0xFFFFu;
        d->row_stride = w2 >> 16;
        d->length = w3 & 0xFFFFu;
        w3_xsel(d, w3, 2);
        d->reserved = ((f & (d->opcode == TPU_OP_VRED ? 0xACu : 0xAFu)) |
                       ((w3 >> 16) & ~(w3_xsel_mask(2) >> 16))) != 0;
        break;
    case TPU_OP_SEND:
    case TPU_OP_RECV:
    case TPU_OP_BCAST:
        d->mem = f & 1u;
        d->row = w1 & 0xFFFFu;
        d->peer = w2 & 0x3Fu;
        w3_xsel(d, w3, 1);
        d->reserved = ((f & ~1u) | (w1 >> 16) | (w2 >> 6) | (w3 & ~w3_xsel_mask(1))) != 0;
        break;
    case TPU_OP_BARRIER:
        d->reserved = (f | d->n | w1 | w2 | w3) != 0;
        break;
    case TPU_OP_ALLREDUCE:
        d->mem = f & 1u;
        d->ring = (f >> 1) & 1u;
        d->row = w1 & 0xFFFFu;
        w3_xsel(d, w3, 1);
        d->reserved = ((f & ~3u) | (w1 >> 16) | w2 | (w3 & ~w3_xsel_mask(1))) != 0;
        break;
    default:
        d->reserved = 1;
        break;
    }
}

tpu_insn_t tpu_insn_encode(const tpu_dinsn_t *d)
{
    tpu_insn_t r = { { 0, 0, 0, 0 } };
    unsigned f = 0, n = d->n & 0xFFFFu;
    switch (d->opcode) {
    case TPU_OP_NOP:
    case TPU_OP_SYNC:
    case TPU_OP_HALT:
        n = 0;
        break;
    case TPU_OP_LOOP:
        f = d->level & 7u;
        r.w[1] = d->skip & 0xFFFFu;
        r.w[2] = d->body & 0xFFFFu;
        break;
    case TPU_OP_STRIDE:
        n = 0;
        f = (d->xreg & 7u) | ((d->xreg >> 3) & 1u) << TPU_STRIDE_XREG_HI;
        if (d->modform) {
            f |= 1u << STRIDE_MOD_FLAG;
            r.w[1] = d->modk & ((1u << TPU_STRIDE_MOD_K_BITS) - 1u);
            break;
        }
        f |= (d->group & 1u) << 3;
        r.w[1] = (uint32_t)d->s[0];
        r.w[2] = (uint32_t)d->s[1];
        r.w[3] = (uint32_t)d->s[2];
        break;
    case TPU_OP_DMA_IN:
    case TPU_OP_DMA_OUT:
        f = (d->mem & 3u) | (d->xsel[0] & 7u) << 2 | (d->xsel[1] & 7u) << 5;
        r.w[1] = d->addr;
        r.w[2] = (d->row & 0xFFFFu) |
                 ((uint32_t)(d->cols & ((1u << TPU_DMA_COLS_BITS) - 1u)) << 16) |
                 (uint32_t)((d->xsel[0] >> 3) & 1u) << TPU_XSEL_DMA_ADDR_HI |
                 (uint32_t)((d->xsel[1] >> 3) & 1u) << TPU_XSEL_DMA_ROW_HI;
        r.w[3] = d->stride;
        break;
    case TPU_OP_LW:
        n = 0;
        f = d->transpose & 1u;
        r.w[1] = d->w_row & 0xFFFFu;
        r.w[3] = w3_xsel_encode(d, 1);
        break;
    case TPU_OP_MATMUL:
        f = (d->accumulate & 1u) | (d->acc_first & 7u) << 1;
        r.w[1] = d->ub_row & 0xFFFFu;
        r.w[2] = d->acc_row & 0xFFFFu;
        r.w[3] = w3_xsel_encode(d, 2);
        break;
    case TPU_OP_VOP:
        f = (d->vop & 15u) | (d->a_mem & 1u) << 4 | (d->b_mem & 1u) << 5 | (d->d_mem & 1u) << 6 |
            (d->bcast & 1u) << 7;
        r.w[1] = (d->a_row & 0xFFFFu) | ((uint32_t)(d->b_row & 0xFFFFu) << 16);
        r.w[2] = d->d_row & 0xFFFFu;
        r.w[3] = w3_xsel_encode(d, 3);
        break;
    case TPU_OP_VRED:
    case TPU_OP_SOFTMAX:
        f = (d->opcode == TPU_OP_VRED ? (d->red & 3u) : 0u) | (d->src_mem & 1u) << 4 |
            (d->d_mem & 1u) << 6;
        r.w[1] = (d->src_row & 0xFFFFu) | ((uint32_t)(d->chunk_stride & 0xFFFFu) << 16);
        r.w[2] = (d->dst_row & 0xFFFFu) | ((uint32_t)(d->row_stride & 0xFFFFu) << 16);
        r.w[3] = (d->length & 0xFFFFu) | w3_xsel_encode(d, 2);
        break;
    case TPU_OP_SEND:
    case TPU_OP_RECV:
    case TPU_OP_BCAST:
        f = d->mem & 1u;
        r.w[1] = d->row & 0xFFFFu;
        r.w[2] = d->peer & 0x3Fu;
        r.w[3] = w3_xsel_encode(d, 1);
        break;
    case TPU_OP_BARRIER:
        n = 0;
        break;
    case TPU_OP_ALLREDUCE:
        f = (d->mem & 1u) | (d->ring & 1u) << 1;
        r.w[1] = d->row & 0xFFFFu;
        r.w[3] = w3_xsel_encode(d, 1);
        break;
    default:
        /* an unknown opcode keeps the raw fields it has */
        f = d->flags & 0xFFu;
        break;
    }
    r.w[0] = (d->opcode & 0xFFu) | (f << 8) | ((uint32_t)n << 16);
    return r;
}

static unsigned mem_rows(const tpu_core_geom_t *g, unsigned mem)
{
    switch (mem) {
    case TPU_MEM_UB: return g->ub_rows;
    case TPU_MEM_ACC: return g->acc_rows;
    case TPU_MEM_WMEM: return g->wmem_rows;
    default: return 0;
    }
}

/* internal: the last row (exact) of a strided vred/softmax access. */
static uint64_t strided_last(uint64_t first, const tpu_dinsn_t *d, unsigned n)
{
    uint64_t chunks = ((uint64_t)d->length + n - 1) / n;
    return first + (uint64_t)(d->n - 1) * d->row_stride + (chunks - 1) * d->chunk_stride;
}

/* internal: 1 when [first, first+count) does not fit in memory mem. */
static int out_of_range(const tpu_core_geom_t *g, unsigned mem, uint64_t first, uint64_t count)
{
    return first + count > (uint64_t)mem_rows(g, mem);
}

int tpu_insn_check(const tpu_dinsn_t *d, const tpu_core_geom_t *g)
{
    unsigned n = g->n ? g->n : 1; /* N = 0 is not a core; avoid dividing by it */
    if (tpu_opcode_name(d->opcode) == NULL || d->reserved)
        return TPU_ERR_OPCODE;
    switch (d->opcode) {
    case TPU_OP_LOOP:
        return d->n == 0 || d->skip == 0 || d->body == 0 ? TPU_ERR_COUNT : 0;
    case TPU_OP_STRIDE:
        return d->xreg == 0 ? TPU_ERR_COUNT : 0;
    case TPU_OP_DMA_IN:
    case TPU_OP_DMA_OUT: {
        if (d->n == 0 || d->cols == 0 || d->cols > n || d->mem == 3 ||
            (d->opcode == TPU_OP_DMA_OUT && d->mem == TPU_MEM_WMEM))
            return TPU_ERR_COUNT;
        unsigned e = tpu_mem_elem_bytes(d->mem);
        if (d->addr % e != 0 || d->stride % e != 0)
            return TPU_ERR_ALIGN;
        if (out_of_range(g, d->mem, d->row, d->n))
            return TPU_ERR_ROW;
        return 0;
    }
    case TPU_OP_LW:
        return out_of_range(g, TPU_MEM_WMEM, d->w_row, n) ? TPU_ERR_ROW : 0;
    case TPU_OP_MATMUL:
        if (d->n == 0)
            return TPU_ERR_COUNT;
        if (out_of_range(g, TPU_MEM_UB, d->ub_row, d->n) ||
            out_of_range(g, TPU_MEM_ACC, d->acc_row, d->n))
            return TPU_ERR_ROW;
        return 0;
    case TPU_OP_VOP:
        if (d->n == 0 || d->vop >= TPU_VOP_COUNT)
            return TPU_ERR_COUNT;
        if (out_of_range(g, d->a_mem, d->a_row, d->n) ||
            (tpu_vop_is_binary(d->vop) &&
             out_of_range(g, d->b_mem, d->b_row, d->bcast ? 1u : d->n)) ||
            out_of_range(g, d->d_mem, d->d_row, d->n))
            return TPU_ERR_ROW;
        return 0;
    case TPU_OP_VRED:
        if (d->n == 0 || d->length == 0 || d->red == 0)
            return TPU_ERR_COUNT;
        if (strided_last(d->src_row, d, n) >= mem_rows(g, d->src_mem) ||
            out_of_range(g, d->d_mem, d->dst_row, ((uint64_t)d->n + n - 1) / n))
            return TPU_ERR_ROW;
        return 0;
    case TPU_OP_SOFTMAX:
        if (d->n == 0 || d->length == 0 || d->src_mem != TPU_MEM_ACC)
            return TPU_ERR_COUNT;
        if (strided_last(d->src_row, d, n) >= mem_rows(g, TPU_MEM_ACC) ||
            strided_last(d->dst_row, d, n) >= mem_rows(g, d->d_mem))
            return TPU_ERR_ROW;
        return 0;
    case TPU_OP_SEND:
    case TPU_OP_RECV:
    case TPU_OP_BCAST:
    case TPU_OP_ALLREDUCE:
        if (d->n == 0 || (d->opcode == TPU_OP_ALLREDUCE && d->mem != TPU_MEM_ACC))
            return TPU_ERR_COUNT;
        if (out_of_range(g, d->mem, d->row, d->n))
            return TPU_ERR_ROW;
        return 0;
    default:
        return 0;
    }
}

int tpu_insn_check_board(const tpu_dinsn_t *d, const tpu_core_geom_t *g, unsigned self,
                         unsigned cores)
{
    int code = tpu_insn_check(d, g);
    if (code != 0)
        return code;
    switch (d->opcode) {
    case TPU_OP_SEND:
    case TPU_OP_RECV:
        if (d->peer >= cores || d->peer == self)
            return TPU_ERR_CORE;
        return 0;
    case TPU_OP_BCAST:
        return d->peer >= cores ? TPU_ERR_CORE : 0;
    default:
        return 0;
    }
}

const char *tpu_err_name(int code)
{
    switch (code) {
    case TPU_ERR_NONE: return "no error";
    case TPU_ERR_OPCODE: return "unknown opcode or reserved bit set";
    case TPU_ERR_ROW: return "memory row out of range";
    case TPU_ERR_COUNT: return "bad count, memory or op";
    case TPU_ERR_ALIGN: return "misaligned host address or stride";
    case TPU_ERR_NO_LW: return "matmul before any lw";
    case TPU_ERR_PC_END: return "pc ran off the end of imem";
    case TPU_ERR_AXI: return "axi error response";
    case TPU_ERR_CORE: return "bad core id";
    case TPU_ERR_LINK: return "a link of the board is dead";
    case TPU_ERR_LOOP: return "bad loop nesting or body";
    default: return "unknown error";
    }
}

static uint32_t sat32(uint64_t v) { return v > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)v; }

static void fp_add(tpu_footprint_t *fp, unsigned mem, unsigned write, uint64_t lo, uint64_t hi)
{
    tpu_fp_range_t *r = &fp->r[fp->count++];
    r->mem = mem;
    r->write = write;
    r->lo = sat32(lo);
    r->hi = sat32(hi);
    fp->ports |= write ? TPU_PORT_WR(mem) : TPU_PORT_RD(mem);
}

int tpu_insn_footprint(const tpu_dinsn_t *d, unsigned n_mxu, tpu_footprint_t *fp)
{
    memset(fp, 0, sizeof *fp);
    uint64_t cnt = d->n ? d->n : 1; /* a checked instruction has n >= 1 */
    switch (d->opcode) {
    case TPU_OP_DMA_IN:
        fp_add(fp, d->mem & 3u, 1, d->row, d->row + cnt - 1);
        break;
    case TPU_OP_DMA_OUT:
        fp_add(fp, d->mem & 3u, 0, d->row, d->row + cnt - 1);
        break;
    case TPU_OP_LW:
        fp_add(fp, TPU_MEM_WMEM, 0, d->w_row, (uint64_t)d->w_row + (n_mxu ? n_mxu : 1) - 1);
        break;
    case TPU_OP_MATMUL:
        fp_add(fp, TPU_MEM_UB, 0, d->ub_row, d->ub_row + cnt - 1);
        if (d->accumulate)
            fp_add(fp, TPU_MEM_ACC, 0, d->acc_row, d->acc_row + cnt - 1);
        fp_add(fp, TPU_MEM_ACC, 1, d->acc_row, d->acc_row + cnt - 1);
        break;
    case TPU_OP_VOP:
        fp_add(fp, d->a_mem, 0, d->a_row, d->a_row + cnt - 1);
        if (tpu_vop_is_binary(d->vop))
            fp_add(fp, d->b_mem, 0, d->b_row, d->bcast ? d->b_row : d->b_row + cnt - 1);
        fp_add(fp, d->d_mem, 1, d->d_row, d->d_row + cnt - 1);
        break;
    case TPU_OP_VRED:
    case TPU_OP_SOFTMAX: {
        unsigned n = n_mxu ? n_mxu : 1;
        tpu_dinsn_t c = *d;
        if (c.n == 0)
            c.n = 1;
        if (c.length == 0)
            c.length = 1;
        uint64_t slast = strided_last(c.src_row, &c, n);
        fp_add(fp, c.src_mem, 0, c.src_row, slast);
        if (d->opcode == TPU_OP_VRED) {
            fp_add(fp, c.d_mem, 1, c.dst_row, c.dst_row + ((uint64_t)c.n + n - 1) / n - 1);
        } else {
            fp_add(fp, c.src_mem, 1, c.src_row, slast);
            fp_add(fp, c.d_mem, 1, c.dst_row, strided_last(c.dst_row, &c, n));
        }
        break;
    }
    case TPU_OP_SEND:
        fp_add(fp, d->mem & 1u, 0, d->row, d->row + cnt - 1);
        break;
    case TPU_OP_RECV:
        fp_add(fp, d->mem & 1u, 1, d->row, d->row + cnt - 1);
        break;
    case TPU_OP_BCAST: /* the root reads, the others write */
    case TPU_OP_ALLREDUCE:
        fp_add(fp, d->mem & 1u, 0, d->row, d->row + cnt - 1);
        fp_add(fp, d->mem & 1u, 1, d->row, d->row + cnt - 1);
        break;
    default:
        break;
    }
    return (int)fp->count;
}

int tpu_footprint_conflict(const tpu_footprint_t *a, const tpu_footprint_t *b)
{
    if (a->ports & b->ports)
        return 1;
    for (unsigned i = 0; i < a->count; i++)
        for (unsigned j = 0; j < b->count; j++) {
            const tpu_fp_range_t *x = &a->r[i], *y = &b->r[j];
            if (x->mem == y->mem && (x->write || y->write) && x->lo <= y->hi && y->lo <= x->hi)
                return 1;
        }
    return 0;
}

/* internal: an operand's text, "V" or "V+xR" (hex for host addresses). */
typedef struct { char t[3][48]; } opnd_t;

static void opnd(opnd_t *o, unsigned slot, const char *mem, uint32_t v, unsigned sel, int hex)
{
    char x[16] = "";
    if (sel)
        snprintf(x, sizeof x, "+x%u", sel);
    snprintf(o->t[slot], sizeof o->t[slot], hex ? "%s%s0x%x%s" : "%s%s%u%s", mem ? mem : "",
             mem ? ":" : "", (unsigned)v, x);
}

size_t tpu_insn_disasm(tpu_insn_t raw, char *buf, size_t len)
{
    tpu_dinsn_t d;
    opnd_t o;
    int k = -1;
    tpu_insn_decode(raw, &d);
    const char *name = tpu_opcode_name(d.opcode);
    int rawform = name == NULL || d.reserved;
    switch (rawform ? 0x100u : d.opcode) {
    case TPU_OP_NOP:
    case TPU_OP_SYNC:
    case TPU_OP_HALT:
        k = snprintf(buf, len, "%s", name);
        break;
    case TPU_OP_LOOP:
        k = snprintf(buf, len, "loop %u count=%u skip=%u body=%u", d.level, d.n, d.skip, d.body);
        break;
    case TPU_OP_STRIDE:
        if (d.modform) { /* mod=M, M = 2^k (mod=0: none) */
            k = snprintf(buf, len, "stride x%u mod=%lu", d.xreg,
                         d.modk ? 1ul << d.modk : 0ul);
        } else {
            unsigned l0 = TPU_STRIDE_GROUP_LEVELS * d.group;
            k = snprintf(buf, len, "stride x%u l%u=%d l%u=%d l%u=%d", d.xreg, l0, (int)d.s[0],
                         l0 + 1, (int)d.s[1], l0 + 2, (int)d.s[2]);
        }
        break;
    case TPU_OP_DMA_IN:
    case TPU_OP_DMA_OUT:
        if (d.mem == 3)
            break;
        opnd(&o, 0, NULL, d.addr, d.xsel[0], 1);
        opnd(&o, 1, NULL, d.row, d.xsel[1], 0);
        k = snprintf(buf, len, "%s %s row=%s rows=%u cols=%u addr=%s stride=%u", name,
                     mem_names[d.mem], o.t[1], d.n, d.cols, o.t[0], (unsigned)d.stride);
        break;
    case TPU_OP_LW:
        opnd(&o, 0, NULL, d.w_row, d.xsel[0], 0);
        k = snprintf(buf, len, "lw w=%s%s", o.t[0], d.transpose ? " transpose" : "");
        break;
    case TPU_OP_MATMUL:
        opnd(&o, 0, NULL, d.ub_row, d.xsel[0], 0);
        opnd(&o, 1, NULL, d.acc_row, d.xsel[1], 0);
        if (d.acc_first)
            k = snprintf(buf, len, "matmul ub=%s acc=%s rows=%u acc_mode=first:l%u", o.t[0],
                         o.t[1], d.n, d.acc_first - 1);
        else
            k = snprintf(buf, len, "matmul ub=%s acc=%s rows=%u%s", o.t[0], o.t[1], d.n,
                         d.accumulate ? " accumulate" : "");
        break;
    case TPU_OP_VOP:
        if (d.vop >= TPU_VOP_COUNT)
            break;
        opnd(&o, 0, mem_names[d.a_mem], d.a_row, d.xsel[0], 0);
        opnd(&o, 1, mem_names[d.b_mem], d.b_row, d.xsel[1], 0);
        opnd(&o, 2, mem_names[d.d_mem], d.d_row, d.xsel[2], 0);
        if (tpu_vop_is_binary(d.vop))
            k = snprintf(buf, len, "vop %s a=%s b=%s%s dst=%s rows=%u", vop_names[d.vop],
                         o.t[0], o.t[1], d.bcast ? " bcast" : "", o.t[2], d.n);
        else
            k = snprintf(buf, len, "vop %s a=%s dst=%s rows=%u", vop_names[d.vop], o.t[0],
                         o.t[2], d.n);
        break;
    case TPU_OP_VRED:
        if (d.red == 0)
            break;
        /* fall through */
    case TPU_OP_SOFTMAX:
        opnd(&o, 0, mem_names[d.src_mem], d.src_row, d.xsel[0], 0);
        opnd(&o, 1, mem_names[d.d_mem], d.dst_row, d.xsel[1], 0);
        k = snprintf(buf, len, "%s%s%s src=%s dst=%s rows=%u length=%u chunk_stride=%u "
                     "row_stride=%u", name, d.red ? " " : "", d.red ? red_names[d.red] : "",
                     o.t[0], o.t[1], d.n, d.length, d.chunk_stride, d.row_stride);
        break;
    case TPU_OP_SEND:
    case TPU_OP_RECV:
    case TPU_OP_BCAST:
        opnd(&o, 0, NULL, d.row, d.xsel[0], 0);
        k = snprintf(buf, len, "%s %s row=%s rows=%u %s=%u", name, mem_names[d.mem], o.t[0],
                     d.n, d.opcode == TPU_OP_BCAST ? "root" : "core", d.peer);
        break;
    case TPU_OP_BARRIER:
        k = snprintf(buf, len, "barrier");
        break;
    case TPU_OP_ALLREDUCE:
        opnd(&o, 0, NULL, d.row, d.xsel[0], 0);
        k = snprintf(buf, len, "allreduce %s row=%s rows=%u%s", mem_names[d.mem], o.t[0], d.n,
                     d.ring ? " ring" : "");
        break;
    default:
        break;
    }
    if (k < 0)
        k = snprintf(buf, len, ".insn 0x%08x, 0x%08x, 0x%08x, 0x%08x", (unsigned)raw.w[0],
                     (unsigned)raw.w[1], (unsigned)raw.w[2], (unsigned)raw.w[3]);
    return (size_t)k;
}

void tpu_insn_to_bytes(tpu_insn_t raw, uint8_t out[16])
{
    for (unsigned j = 0; j < 4; j++)
        for (unsigned b = 0; b < 4; b++)
            out[4 * j + b] = (uint8_t)(raw.w[j] >> (8 * b));
}

tpu_insn_t tpu_insn_from_bytes(const uint8_t in[16])
{
    tpu_insn_t r;
    for (unsigned j = 0; j < 4; j++)
        r.w[j] = (uint32_t)in[4 * j] | (uint32_t)in[4 * j + 1] << 8 |
                 (uint32_t)in[4 * j + 2] << 16 | (uint32_t)in[4 * j + 3] << 24;
    return r;
}
