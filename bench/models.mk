# SPDX-License-Identifier: Apache-2.0
# make bench-models: host inference speed on the Fashion-MNIST models: tpu-infer (C model)
# against PyTorch fp32 and ONNX Runtime, one thread each (bench/models.sh). The models, the
# data and ORT come from tests/models/suite.mk. Then bench-host.
# make bench-host: the same for one 224x224 torchvision ResNet-50 image on one core of N = 128
# (bench/host.sh, issue 18 "Host speed"; ~1 min: export, compile, 5 runs of each).
.PHONY: bench-models bench-host
bench-models: $(MODELS_ONNX) $(MODELS_DATA) $(ORT_NODE_STAMP) $(TOOLS_DIR)/tpu-compile $(TOOLS_DIR)/tpu-infer
	@MODELS_PY=$(MODELS_PY) M=$(MODELS_BUILD) T=$(TOOLS_DIR) sh bench/models.sh
	@T=$(TOOLS_DIR) W=$(BUILD)/bench/host sh bench/host.sh

bench-host: $(ORT_NODE_STAMP) $(TOOLS_DIR)/tpu-compile $(TOOLS_DIR)/tpu-infer
	@T=$(TOOLS_DIR) W=$(BUILD)/bench/host sh bench/host.sh
