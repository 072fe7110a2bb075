# SPDX-License-Identifier: Apache-2.0
# make bench-models: host inference speed on the Fashion-MNIST models: tpu-infer (C model)
# against PyTorch fp32 and ONNX Runtime, one thread each (bench/models.sh). The models, the
# data and ORT come from tests/models/suite.mk.
.PHONY: bench-models
bench-models: $(MODELS_ONNX) $(MODELS_DATA) $(ORT_NODE_STAMP) $(TOOLS_DIR)/tpu-compile $(TOOLS_DIR)/tpu-infer
	@MODELS_PY=$(MODELS_PY) M=$(MODELS_BUILD) T=$(TOOLS_DIR) sh bench/models.sh
