/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration's defaults (tpu/config.h): the one definition gen, the model, the tools
   and the compiler use. */
#include "tpu/config.h"

static unsigned rows_of(unsigned long long kib, unsigned row_bytes, unsigned dflt)
{
    if (kib == 0) return dflt;
    unsigned long long b = kib * 1024ull;
    if (row_bytes == 0 || b % row_bytes || b / row_bytes > 0xFFFFFFFFull) return 0;
    return (unsigned)(b / row_bytes);
}

unsigned tpu_cfg_ub_rows(unsigned n, unsigned long long kib)
{
    return rows_of(kib, 2u * n, TPU_CFG_UB_ROWS_DEFAULT);
}

unsigned tpu_cfg_acc_rows(unsigned n, unsigned long long kib)
{
    return rows_of(kib, 4u * n, TPU_CFG_ACC_ROWS_DEFAULT);
}

unsigned tpu_cfg_wmem_rows(unsigned n, unsigned long long kib)
{
    return rows_of(kib, 2u * n, TPU_CFG_WMEM_TILES_DEFAULT * n);
}

unsigned tpu_cfg_axi_data_bits(unsigned n)
{
    unsigned b = TPU_CFG_AXI_DATA_BITS_MIN;
    while (b < 4u * n && b < TPU_CFG_AXI_DATA_BITS_MAX) b *= 2u;
    return b;
}
