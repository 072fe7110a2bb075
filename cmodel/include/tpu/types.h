/* SPDX-License-Identifier: Apache-2.0 */
/* Value types of the TPU C model. See docs/numerics.md. */
#ifndef TPU_TYPES_H
#define TPU_TYPES_H

#include <stdint.h>

/* Raw-bit wrappers: host float cannot be passed where these are expected. */
typedef struct { uint16_t v; } bf16_t;
typedef struct { uint32_t v; } fp32_t;

#define TPU_FP32_QNAN 0x7FC00000u /* the canonical fp32 NaN */
#define TPU_BF16_QNAN 0x7FC0u     /* the canonical bf16 NaN */
#define TPU_FP32_NEG_ZERO 0x80000000u

/* Return codes of every model function that can fail. */
typedef enum {
    TPU_OK = 0,
    TPU_EINVAL = -1, /* an argument is out of range or NULL */
    TPU_ENOMEM = -2, /* an allocation failed */
    TPU_EIO = -3     /* a file could not be written or read */
} tpu_status_t;

static inline bf16_t bf16_from_bits(uint16_t v) { bf16_t r = { v }; return r; }
static inline fp32_t fp32_from_bits(uint32_t v) { fp32_t r = { v }; return r; }

#endif
