# SPDX-License-Identifier: Apache-2.0
# The core's C model (tpu/core.h): results against tpu_matmul and the VPU functions at
# N = 1, 3, 4, 8, 16 (own programs and tpu-mkprog's), every error code, the timing model
# against the MXU schedule, the tpu-run command line; the board model (tpu/board.h) and the
# tpu-board-run command line; the default AXI data width, gen's against the model's;
# constrained-random programs (tpu-mkprog random, ~300 at N = 1 .. 16) end as predicted.
#   test-core-model   (make test)

CORE_MODEL_TEST_DIR  := $(BUILD)/tests/core_model
CORE_MODEL_TEST_BINS := $(CORE_MODEL_TEST_DIR)/test_core $(CORE_MODEL_TEST_DIR)/test_mkprog \
                        $(CORE_MODEL_TEST_DIR)/test_boardrun

TEST_SUITES += test-core-model

.PHONY: test-core-model

$(CORE_MODEL_TEST_DIR)/test_%: tests/core_model/test_%.c $(CMODEL_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) $< -o $@ $(TEST_LIBS)

test-core-model: $(CORE_MODEL_TEST_BINS) $(TOOLS_DIR)/tpu-mkprog $(TOOLS_DIR)/tpu-run \
                 $(TOOLS_DIR)/tpu-board-run $(GEN)
	@echo "== $(CORE_MODEL_TEST_DIR)/test_core"; $(CORE_MODEL_TEST_DIR)/test_core
	@echo "== $(CORE_MODEL_TEST_DIR)/test_boardrun"; $(CORE_MODEL_TEST_DIR)/test_boardrun
	@mkdir -p $(CORE_MODEL_TEST_DIR)/jobs
	@echo "== $(CORE_MODEL_TEST_DIR)/test_mkprog"; \
	    $(CORE_MODEL_TEST_DIR)/test_mkprog $(TOOLS_DIR)/tpu-mkprog $(CORE_MODEL_TEST_DIR)/jobs
	@echo "== tests/core_model/run_cli.sh"; \
	    sh tests/core_model/run_cli.sh $(TOOLS_DIR)/tpu-run $(TOOLS_DIR)/tpu-mkprog $(CORE_MODEL_TEST_DIR)/cli
	@echo "== tests/core_model/run_board_cli.sh"; \
	    sh tests/core_model/run_board_cli.sh $(TOOLS_DIR)/tpu-board-run $(TOOLS_DIR)/tpu-mkprog \
	    $(CORE_MODEL_TEST_DIR)/board_cli
	@echo "== tests/core_model/random.sh"; \
	    sh tests/core_model/random.sh $(TOOLS_DIR)/tpu-mkprog $(TOOLS_DIR)/tpu-run \
	    $(CORE_MODEL_TEST_DIR)/random 40
	@echo "== tests/core_model/axi_default.sh"; \
	    sh tests/core_model/axi_default.sh $(GEN) $(TOOLS_DIR)/tpu-run $(TOOLS_DIR)/tpu-board-run \
	    $(CORE_MODEL_TEST_DIR)/axi_default
