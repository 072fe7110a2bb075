# SPDX-License-Identifier: Apache-2.0
# The C model's MXU: tiled matmul (integer and fast paths) vs an untiled host-float oracle,
# the schedule of docs/mxu.md, the trace writer, the VPU's fast paths, fp32_to_bf16_run, the
# DMA's row copies.
#   test-model   (make test)

MODEL_TEST_DIR  := $(BUILD)/tests/model
MODEL_TEST_BINS := $(MODEL_TEST_DIR)/test_matmul $(MODEL_TEST_DIR)/test_schedule \
                   $(MODEL_TEST_DIR)/test_mx_fast \
                   $(MODEL_TEST_DIR)/test_trace $(MODEL_TEST_DIR)/test_vpu_fast \
                   $(MODEL_TEST_DIR)/test_f2b_run $(MODEL_TEST_DIR)/test_dma_fast
MODEL_TEST_DEPS := tests/model/oracle.c tests/model/oracle.h $(SIM_HDRS) $(CMODEL_LIB) $(SIM_LIB)

TEST_SUITES += test-model

.PHONY: test-model

$(MODEL_TEST_DIR)/test_%: tests/model/test_%.c $(MODEL_TEST_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -Isim -Itests/model -Icmodel/src $< tests/model/oracle.c -o $@ $(SIM_LIB) $(TEST_LIBS)

test-model: $(MODEL_TEST_BINS)
	@for t in $(MODEL_TEST_BINS); do echo "== $$t"; $$t || exit 1; done
