# SPDX-License-Identifier: Apache-2.0
# Training mode (docs/training.md): tests/train/run.sh.
.PHONY: test-train
TEST_SUITES += test-train

test-train: $(BUILD)/tools/tpu-train $(BUILD)/tools/tpu-compile
	sh tests/train/run.sh $(BUILD)/test-train

# make test-full: the tutorial's models on real Fashion-MNIST against PyTorch (~3 min)
.PHONY: test-train-full
FULL_SUITES += test-train-full
test-train-full: $(BUILD)/tools/tpu-train
	sh tests/train/full.sh $(BUILD)/test-train-full

# step_text: a training step's program text, phases and layout, with no run (the byte-for-byte
# comparison of two builds' training pass: tests/train/same_text.sh)
$(BUILD)/tests/step_text: tests/train/step_text.c $(TPUC_LIB) $(CMODEL_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -Icompiler/include $(CMODEL_INC) $< $(TPUC_LIB) $(CMODEL_LIB) -lprotobuf-c -lm -o $@

# make train-same-text [TEXT_BASE=REV]: the training pass's output over tests/train/same_text.sh's
# matrix, this tree against REV's (default main), byte for byte (a refactoring's check; not
# part of make test: a few minutes)
.PHONY: train-same-text train-same-bits
TEXT_BASE ?= main
train-same-text: $(BUILD)/tests/step_text
	BUILD=$(BUILD) sh tests/train/same_text.sh compare $(TEXT_BASE) $(BUILD)/same-text

# make train-same-bits [BITS_BASE=REV]: tpu-train of this tree and REV's (default main) over
# tests/train/same_bits.sh's matrix, the weights and gradients compared byte for byte (a
# change that may change the program text but not a step's numerics; not part of make test)
BITS_BASE ?= main
train-same-bits: $(TOOLS_DIR)/tpu-train
	BUILD=$(BUILD) sh tests/train/same_bits.sh compare $(BITS_BASE) $(BUILD)/same-bits
