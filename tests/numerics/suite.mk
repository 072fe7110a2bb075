# SPDX-License-Identifier: Apache-2.0
# test-numerics: the C model's numerics against MPFR and the host CPU (docs/numerics.md).
# The oracle objects are shared with the exhaustive programs of tests/full.

NUMERICS_DIR   := tests/numerics
NUMERICS_BUILD := $(BUILD)/tests/numerics
NUMERICS_INC   := -I$(NUMERICS_DIR)
NUMERICS_HDRS  := $(wildcard $(NUMERICS_DIR)/*.h) $(wildcard cmodel/include/tpu/*.h)
# The oracles: MPFR, and the host's SSE arithmetic (MXCSR FTZ/DAZ set at run time;
# -ffp-contract=off comes with TEST_CFLAGS).
NUMERICS_ORACLE_OBJS := $(NUMERICS_BUILD)/oracle_mpfr.o $(NUMERICS_BUILD)/oracle_host.o
NUMERICS_TEST_OBJS   := $(NUMERICS_BUILD)/test_numerics.o $(NUMERICS_BUILD)/harness.o \
                        $(NUMERICS_ORACLE_OBJS)
NUMERICS_TEST_BIN    := $(NUMERICS_BUILD)/test_numerics

$(NUMERICS_BUILD)/%.o: $(NUMERICS_DIR)/%.c $(NUMERICS_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) $(NUMERICS_INC) -c $< -o $@

$(NUMERICS_TEST_BIN): $(NUMERICS_TEST_OBJS) $(CMODEL_LIB)
	$(CC) $(TEST_CFLAGS) $(NUMERICS_TEST_OBJS) $(TEST_LIBS) -o $@

.PHONY: test-numerics
test-numerics: $(NUMERICS_TEST_BIN)
	$(NUMERICS_TEST_BIN)

TEST_SUITES += test-numerics
