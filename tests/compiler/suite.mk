# SPDX-License-Identifier: Apache-2.0
# The ONNX compiler (docs/compiler.md): tests/compiler/run.sh.
.PHONY: test-compiler
TEST_SUITES += test-compiler

test-compiler: $(BUILD)/tools/tpu-compile $(BUILD)/tools/tpu-infer $(GEN) $(CMODEL_LIB)
	sh tests/compiler/run.sh $(BUILD)/test-compiler 1
