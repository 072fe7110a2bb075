/* SPDX-License-Identifier: Apache-2.0 */
/* The test-matrix generator moved to the model library (tpu/matgen.h) so that the tools can
   stand on it; this name is kept for the harnesses and tests that include "matgen.h". */
#ifndef TPU_SIM_MATGEN_H
#define TPU_SIM_MATGEN_H
#include "tpu/matgen.h"
#endif
