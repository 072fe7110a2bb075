# SPDX-License-Identifier: Apache-2.0
# Exhaustive numerics (make test-full): all 2^32 fp32 -> bf16 conversions, all 2^32
# bf16 x bf16 products, and 2^32 random fp32 additions, against the oracles of
# tests/numerics (whose objects are built by tests/numerics/suite.mk's pattern rule).
# Threads: TPU_FULL_THREADS (default 2).

FULL_DIR     := tests/full
FULL_BUILD   := $(BUILD)/tests/full
FULL_ORACLES := $(BUILD)/tests/numerics/oracle_mpfr.o $(BUILD)/tests/numerics/oracle_host.o
FULL_HDRS    := $(FULL_DIR)/full_common.h $(wildcard tests/numerics/*.h) \
                $(wildcard cmodel/include/tpu/*.h)
FULL_CFLAGS  := $(TEST_CFLAGS) -O3 -pthread -Itests/numerics

$(FULL_BUILD)/%: $(FULL_DIR)/%.c $(FULL_HDRS) $(FULL_ORACLES) $(CMODEL_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(FULL_CFLAGS) $< $(FULL_ORACLES) $(TEST_LIBS) -pthread -o $@

.PHONY: test-full-convert test-full-mul test-full-add
test-full-convert: $(FULL_BUILD)/full_convert
	$(FULL_BUILD)/full_convert

test-full-mul: $(FULL_BUILD)/full_mul
	$(FULL_BUILD)/full_mul

test-full-add: $(FULL_BUILD)/full_add
	$(FULL_BUILD)/full_add

FULL_SUITES += test-full-convert test-full-mul test-full-add
