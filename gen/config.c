/* SPDX-License-Identifier: Apache-2.0 */
/* Timing of the generated MXU as a function of N and the PE pipeline depth S.
   One place derives it; the RTL emitters and tpu_params.h both use these numbers. */
#include "config.h"

/* Row r's activations wait S cycles per row above it: a partial sum needs S cycles to get
   through one PE, and the activation must meet it in the next row. */
unsigned gen_act_skew(const struct gen_config *cfg, unsigned r)
{
    return cfg->pe_stages * r;
}

/* Column c's result leaves the bottom PE in cycle t + 1 + S*N + c; column N-1 is the last,
   so column c waits N - 1 - c more cycles. */
unsigned gen_out_deskew(const struct gen_config *cfg, unsigned c)
{
    return cfg->n - 1u - c;
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
    /* PE(N-1, N-1) sees the vector in cycle t + 1 + act_skew(N-1) + (N-1) and its result
       is registered S cycles later, after which no de-skew is needed:
       L = 1 + S*(N-1) + (N-1) + S = S*N + N   (S = 1: L = 2N). */
    cfg->latency = 1u + gen_act_skew(cfg, n - 1u) + (n - 1u) + s;
    /* The last use of the bank is by PE(N-1, N-1) in cycle t + 1 + S*(N-1) + N-1; a weight
       shift in cycle t' is seen from t' + 1, so loads are safe from that cycle on:
       B = S*(N-1) + N-1   (S = 1: B = 2N - 2; N = 1: B = 0, never busy). */
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
}
