/* SPDX-License-Identifier: Apache-2.0 */
/* Umbrella header of the TPU C model: value types, numerics, the MXU model, traces. */
#ifndef TPU_TPU_H
#define TPU_TPU_H

#include "tpu/types.h"
#include "tpu/numerics.h"
#include "tpu/mxu.h"
#include "tpu/trace.h"

#endif
