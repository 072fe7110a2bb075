# SPDX-License-Identifier: Apache-2.0
# torchvision models on the compiler (tests/zoo/run.sh), make test-full.
.PHONY: test-zoo
FULL_SUITES += test-zoo

test-zoo: $(BUILD)/tools/tpu-compile $(BUILD)/tools/tpu-infer
	sh tests/zoo/run.sh $(BUILD)/test-zoo
