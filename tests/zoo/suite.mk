# SPDX-License-Identifier: Apache-2.0
# torchvision models on the compiler (tests/zoo/run.sh), make test-full: thirteen models at 64x64,
# batch 4 on 1, 2, 4 cores and batch 1, against the derived bound, PyTorch fp32 and ONNX Runtime.
.PHONY: test-zoo
FULL_SUITES += test-zoo

test-zoo: $(BUILD)/tools/tpu-compile $(BUILD)/tools/tpu-infer $(ORT_NODE_STAMP)
	sh tests/zoo/run.sh $(BUILD)/test-zoo

# ResNet-18 and MobileNetV2 (64x64, one image) on the verilated N = 32 core (~4 min with the build)
.PHONY: test-zoo-rtl
FULL_SUITES += test-zoo-rtl
test-zoo-rtl: $(BUILD)/tools/tpu-compile $(BUILD)/tools/tpu-infer $(GEN) $(CMODEL_LIB)
	sh tests/zoo/rtl.sh $(BUILD)/test-zoo-rtl
