# SPDX-License-Identifier: Apache-2.0
# Training mode (docs/training.md): tests/train/run.sh.
.PHONY: test-train
TEST_SUITES += test-train

test-train: $(BUILD)/tools/tpu-train $(BUILD)/tools/tpu-compile
	sh tests/train/run.sh $(BUILD)/test-train
