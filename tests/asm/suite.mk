# SPDX-License-Identifier: Apache-2.0
# The core's ISA library, assembler, disassembler, .npy files, host job options, and the
# programs of tpu-mkprog (they assemble and pass the dispatch checks at several N).
#   test-asm   (make test)

ASM_TEST_DIR  := $(BUILD)/tests/asm
ASM_TEST_BINS := $(ASM_TEST_DIR)/test_isa $(ASM_TEST_DIR)/test_asm $(ASM_TEST_DIR)/test_npy_host

TEST_SUITES += test-asm

.PHONY: test-asm

$(ASM_TEST_DIR)/test_%: tests/asm/test_%.c $(CMODEL_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -DTOOLS_DIR='"$(abspath $(TOOLS_DIR))"' $< -o $@ $(TEST_LIBS)

test-asm: $(ASM_TEST_BINS) $(TOOLS)
	@for t in $(ASM_TEST_BINS); do echo "== $$t"; $$t || exit 1; done
	@sh tests/asm/tools.sh $(TOOLS_DIR)
