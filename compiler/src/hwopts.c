/* SPDX-License-Identifier: Apache-2.0 */
/* gen's hardware options for the compiler's tools (tpuc/hwopts.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpu/board.h"
#include "tpu/config.h"
#include "tpu/core.h"
#include "tpuc/hwopts.h"

void tpuc_hwopts_init(tpuc_hwopts_t *o)
{
    memset(o, 0, sizeof *o);
    o->n = TPU_CFG_MXU_DEFAULT;
    o->cores = TPU_CFG_CORES_DEFAULT;
    o->imem = TPU_CFG_IMEM_INSNS_DEFAULT;
}

int tpuc_hwopts_parse(tpuc_hwopts_t *o, int id, const char *name, const char *val, char *err,
                      size_t errlen)
{
    switch (id) {
    case TPUC_HWOPT_MXU: return tpu_cli_count(name, val, 1, 256, &o->n, err, errlen);
    case TPUC_HWOPT_UB: return tpu_cli_count(name, val, 1, TPU_LIM_KIB_MAX, &o->ub_kib, err, errlen);
    case TPUC_HWOPT_ACC: return tpu_cli_count(name, val, 1, TPU_LIM_KIB_MAX, &o->acc_kib, err, errlen);
    case TPUC_HWOPT_WM: return tpu_cli_count(name, val, 1, TPU_LIM_KIB_MAX, &o->wm_kib, err, errlen);
    case TPUC_HWOPT_IMEM: return tpu_cli_count(name, val, 1, TPU_LIM_IMEM_INSNS_MAX, &o->imem, err, errlen);
    case TPUC_HWOPT_AXI:
        if (tpu_cli_count(name, val, 64, 512, &o->axi, err, errlen)) return -1;
        if (!tpu_axi_data_bits_ok((unsigned)o->axi)) {
            snprintf(err, errlen, "%s '%s': expected 64, 128, 256 or 512", name, val);
            return -1;
        }
        return 0;
    case TPUC_HWOPT_CORES: return tpu_cli_count(name, val, 1, TPU_LIM_CORES_MAX, &o->cores, err, errlen);
    case TPUC_HWOPT_TOPO: o->topo = val; return 0;
    default:
        snprintf(err, errlen, "internal error: option %d is not a hardware option", id);
        return -1;
    }
}

/* KiB -> rows with tpu/config.h's rule (gen's): whole rows, 1 .. 65536. */
static int kib_rows(const char *opt, uint64_t kib, unsigned rows, unsigned row_bytes,
                    unsigned *out, char *err, size_t errlen)
{
    if (rows < 1 || rows > TPU_LIM_MEM_ROWS_MAX) {
        snprintf(err, errlen, "%s %" PRIu64 ": must give 1 .. 65536 whole rows of %u bytes", opt,
                 kib, row_bytes);
        return -1;
    }
    *out = rows;
    return 0;
}

int tpuc_hwopts_resolve(const tpuc_hwopts_t *o, tpuc_hw_t *hw, char *err, size_t errlen)
{
    const unsigned nn = (unsigned)o->n;
    hw->geom = tpu_core_geom_default(nn);
    hw->geom.imem_insns = (unsigned)o->imem;
    if (kib_rows("--ub-kib", o->ub_kib, tpu_cfg_ub_rows(nn, o->ub_kib), 2u * nn, &hw->geom.ub_rows, err, errlen) ||
        kib_rows("--acc-kib", o->acc_kib, tpu_cfg_acc_rows(nn, o->acc_kib), 4u * nn, &hw->geom.acc_rows, err, errlen) ||
        kib_rows("--wmem-kib", o->wm_kib, tpu_cfg_wmem_rows(nn, o->wm_kib), 2u * nn, &hw->geom.wmem_rows, err, errlen))
        return -1;
    hw->axi_data_bits = o->axi ? (unsigned)o->axi : tpu_cfg_axi_data_bits(nn);
    hw->cores = (unsigned)o->cores;
    return tpu_board_topology_parse(o->topo, hw->cores, &hw->topo_rows, &hw->topo_cols, err, errlen);
}

int tpuc_opt_real(const char *name, const char *val, double lo, double hi, double *out,
                  char *err, size_t errlen)
{
    char *end;
    errno = 0;
    double v = strtod(val, &end);
    if (!*val || *end || errno || !isfinite(v) || v < lo || v > hi) {
        snprintf(err, errlen, "--%s '%s': expected a number in [%g, %g]", name, val, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}
