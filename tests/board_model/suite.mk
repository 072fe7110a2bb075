# SPDX-License-Identifier: Apache-2.0
# The C model's board (tpu/board.h, docs/board.md): ring and torus all-reduce against
# references written from the document, bit-identical cores, the cycle model (test_board);
# tpu-mkprog's board jobs on the board model at C = 2, 4, 8, ring and torus, N = 1, 3, 4,
# every dump against an oracle composed from tested pieces, deterministic traces, deadlock
# reports and error 8 (test_board_jobs).
#   test-board-model   (make test)

BOARD_MODEL_TEST_DIR  := $(BUILD)/tests/board_model
BOARD_MODEL_TEST_BIN  := $(BOARD_MODEL_TEST_DIR)/test_board
BOARD_MODEL_JOBS_BIN  := $(BOARD_MODEL_TEST_DIR)/test_board_jobs

TEST_SUITES += test-board-model

.PHONY: test-board-model

$(BOARD_MODEL_TEST_BIN) $(BOARD_MODEL_JOBS_BIN): $(BOARD_MODEL_TEST_DIR)/%: tests/board_model/%.c \
                                               $(CMODEL_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) $< -o $@ $(TEST_LIBS)

test-board-model: $(BOARD_MODEL_TEST_BIN) $(BOARD_MODEL_JOBS_BIN) $(TOOLS_DIR)/tpu-mkprog
	@echo "== $(BOARD_MODEL_TEST_BIN)"; $(BOARD_MODEL_TEST_BIN)
	@rm -rf $(BOARD_MODEL_TEST_DIR)/jobs && mkdir -p $(BOARD_MODEL_TEST_DIR)/jobs
	@echo "== $(BOARD_MODEL_JOBS_BIN)"; \
	    $(BOARD_MODEL_JOBS_BIN) $(TOOLS_DIR)/tpu-mkprog $(BOARD_MODEL_TEST_DIR)/jobs
