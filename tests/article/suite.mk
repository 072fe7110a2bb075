# SPDX-License-Identifier: Apache-2.0
# The article's three Keras models in PyTorch (models/article.py, issue 31): Keras' parameter
# counts and stage shapes, and Xception at 71x71 through tpu-compile --report-only at N = 16
# (tests/article/run.sh; ~20 s of CPU). bench/article.sh part 5 predicts them at 192x192.
.PHONY: test-article
TEST_SUITES += test-article

test-article: $(BUILD)/tools/tpu-compile
	T=$(BUILD)/tools sh tests/article/run.sh $(BUILD)/test-article
