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
