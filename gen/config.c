/* SPDX-License-Identifier: Apache-2.0 */
/* Timing of the generated MXU as a function of N and the PE pipeline depth S.
   One place derives it; the RTL emitters and tpu_params.h both use these numbers. */
#include "tpu/config.h"
#include "config.h"

/* Row r's activations wait A cycles per row above it: a partial sum needs A cycles (the
   adder's depth) to get through one PE, and the activation must meet it in the next row.
   The product register (P = 1) does not add to this: the product of row r is formed one
   cycle before row r's adder needs it, while the partial sum is still in the row above. */
unsigned gen_act_skew(const struct gen_config *cfg, unsigned r)
{
    return cfg->add_stages * r;
}

/* Column c's seed meets the product of PE(0, c), which is registered P cycles after the
   activation arrives: the seed waits P + c cycles after its input register. */
unsigned gen_seed_skew(const struct gen_config *cfg, unsigned c)
{
    return cfg->mul_stages + c;
}

/* Column c's result leaves the bottom PE in cycle t + 1 + P + A*N + c (t + P + A*N + c + 1
   is the first cycle it is on psum_o); column N-1 is the last, so column c waits N - 1 - c
   more cycles. */
unsigned gen_out_deskew(const struct gen_config *cfg, unsigned c)
{
    return cfg->n - 1u - c;
}

unsigned gen_axi_data_bits_default(unsigned n)
{
    return tpu_cfg_axi_data_bits(n); /* the one definition (tpu/config.h) */
}

unsigned gen_bits_for(unsigned v)
{
    unsigned w = 1;
    while (w < 32u && (v >> w) != 0)
        w++;
    return w;
}

void gen_config_derive(struct gen_config *cfg)
{
    unsigned n = cfg->n, s = cfg->pe_stages;
    /* The one place the PE's structure is decided (docs/mxu.md, "Timing"):
       S = 1: multiply and add in one cycle;
       S = 2: a register after the multiplier (P = 1), the add in one cycle (A = 1);
       S = 3: the product register and the adder split in two halves (A = 2). */
    cfg->mul_stages = s >= 2u ? 1u : 0u;
    cfg->add_stages = s >= 3u ? 2u : 1u;
    /* PE(N-1, c) sees the vector in cycle t + 1 + A*(N-1) + c, its product is registered P
       cycles later and its sum A cycles after that; column c = N-1 needs no de-skew:
       L = 1 + A*(N-1) + (N-1) + P + A = A*N + N + P
       (S = 1: L = 2N; S = 2: L = 2N + 1; S = 3: L = 3N + 1). */
    cfg->latency =
        1u + gen_act_skew(cfg, n - 1u) + (n - 1u) + cfg->mul_stages + cfg->add_stages;
    /* The last use of the bank is by PE(N-1, N-1), which selects its weight in the cycle the
       activation arrives, t + 1 + A*(N-1) + N-1 (the product register holds the product,
       not the weight); a weight shift in cycle t' is seen from t' + 1, so loads are safe
       from that cycle on: B = A*(N-1) + N-1
       (S = 1, 2: B = 2N - 2; S = 3: B = 3N - 3; N = 1: B = 0, never busy). */
    cfg->busy = gen_act_skew(cfg, n - 1u) + (n - 1u);
    cfg->busy_w = cfg->busy ? gen_bits_for(cfg->busy) : 0u;
    /* VPU: the lanes' fp32 results enter the tree Latency cycles after valid_i; each tree
       level and the accumulator add one register. */
    if (cfg->vpu_lanes == 0)
        cfg->vpu_lanes = n;
    cfg->vpu_leaves = 1;
    cfg->vpu_levels = 0;
    while (cfg->vpu_leaves < cfg->vpu_lanes) {
        cfg->vpu_leaves *= 2u;
        cfg->vpu_levels++;
    }
    cfg->vpu_latency = GEN_VPU_LATENCY;
    cfg->vpu_red_latency = GEN_VPU_LATENCY + cfg->vpu_levels + 1u;
    /* The core's memories: UB and ACC 8N KiB (4096 and 2048 rows), WMEM 8 tiles (8N rows). */
    cfg->ub_rows = tpu_cfg_ub_rows(n, cfg->ub_kib); /* tpu/config.h: shared with the model */
    cfg->acc_rows = tpu_cfg_acc_rows(n, cfg->acc_kib);
    cfg->wmem_rows = tpu_cfg_wmem_rows(n, cfg->wmem_kib);
    if (cfg->imem_insns == 0)
        cfg->imem_insns = GEN_IMEM_INSNS_DEFAULT;
    if (cfg->axi_data_bits == 0)
        cfg->axi_data_bits = gen_axi_data_bits_default(n);
}
