# SPDX-License-Identifier: Apache-2.0
# The C model's board collectives (tpu/board.h, docs/board.md): ring and torus all-reduce
# against references written from the document, bit-identical cores, the cycle model.
#   test-board-model   (make test)

BOARD_MODEL_TEST_DIR := $(BUILD)/tests/board_model
BOARD_MODEL_TEST_BIN := $(BOARD_MODEL_TEST_DIR)/test_board

TEST_SUITES += test-board-model

.PHONY: test-board-model

$(BOARD_MODEL_TEST_BIN): tests/board_model/test_board.c $(CMODEL_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) $< -o $@ $(TEST_LIBS)

test-board-model: $(BOARD_MODEL_TEST_BIN)
	$(BOARD_MODEL_TEST_BIN)
