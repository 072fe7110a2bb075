/* SPDX-License-Identifier: Apache-2.0 */
/* The machine's configuration and its defaults, defined once: gen (the RTL), the C model, the
   tools and the compiler all take the sizes from here (docs/isa.md "Memories", "AXI4 master
   (data)"). */
#ifndef TPU_CONFIG_H
#define TPU_CONFIG_H

#ifdef __cplusplus
extern "C" {
#endif

#define TPU_CFG_MXU_DEFAULT 128u        /* the TPU's 128 x 128 array */
#define TPU_CFG_CORES_DEFAULT 8u        /* a TPU v2 board */
#define TPU_CFG_IMEM_INSNS_DEFAULT 1024u
#define TPU_CFG_UB_ROWS_DEFAULT 4096u   /* UB and ACC: 8N KiB each */
#define TPU_CFG_ACC_ROWS_DEFAULT 2048u
#define TPU_CFG_WMEM_TILES_DEFAULT 8u   /* WMEM: N*N/64 KiB, 8 weight tiles of N rows */
#define TPU_CFG_AXI_DATA_BITS_MIN 64u
#define TPU_CFG_AXI_DATA_BITS_MAX 512u

/* Rows of N elements in a memory of `kib` KiB (0: the default) for an N x N array: UB and WMEM
   rows are 2N bytes, ACC rows 4N. The result is 0 when kib does not give whole rows. */
unsigned tpu_cfg_ub_rows(unsigned n, unsigned long long kib);
unsigned tpu_cfg_acc_rows(unsigned n, unsigned long long kib);
unsigned tpu_cfg_wmem_rows(unsigned n, unsigned long long kib);

/* The default width of the AXI4 data master: the smallest power of two >= 4N, clamped to
   64 .. 512 (B >= 4N: a UB or WMEM row takes at most 4 beats and an ACC row 8, so the DMA's
   time per row does not grow with N; 512 is the widest port of common FPGA memory
   controllers). */
unsigned tpu_cfg_axi_data_bits(unsigned n);

#ifdef __cplusplus
}
#endif
#endif
