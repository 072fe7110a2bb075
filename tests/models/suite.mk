# SPDX-License-Identifier: Apache-2.0
# Real models (issue 14): two Fashion-MNIST classifiers trained in fp32 with PyTorch and
# exported to ONNX (models/train.py: the TensorFlow tutorial's CNN and an MLP 784-256-10),
# run by ONNX Runtime (npm onnxruntime-node, models/ort_run.js) and by our machine
# (tpu-compile, tpu-infer), compared by models/compare.py. Trained once, cached in
# build/models/ (deterministic: fixed seeds, one torch thread, the same bytes every time).
#   test-models-ref   (make test)  the references and the scripts without our machine:
#                                  PyTorch accuracy floors, ORT against PyTorch on the 10,000
#                                  test images, compare.py passes good and fails wrong outputs,
#                                  ort_run.js's .npy reader/writer against numpy and its errors
#   test-models       (make test)  our machine (C model) on 64 and 512 test images, one
#                                  N = 8 core and 8 N = 16 cores (tpu-compile --imem-insns
#                                  8192), against PyTorch and ORT; deterministic, batch-
#                                  independent, the same bytes in both configurations
#                                  (tests/models/run.sh test; ~1 min)
#   test-models-full  (make test-full)  all 10,000 test images in the same two
#                                  configurations, the issue's thresholds: accuracy within
#                                  0.5 points of PyTorch fp32 and >= 99 % identical
#                                  predictions; tpu-infer --rtl on 2 images (one N = 16 core,
#                                  built on demand) gives the C model's bytes
#                                  (tests/models/run.sh full; ~2 min + the core's build)
# Other targets: `make models` (train and export both), `make ort-node` (install ORT).

MODELS_PY      := /usr/bin/python3
MODELS_BUILD   := $(BUILD)/models
# onnxruntime-node: the CPU binaries ship inside the npm package (no install script needed)
ORT_NODE_VERSION := 1.30.0
ORT_NODE_STAMP := $(BUILD)/node/onnxruntime-node-$(ORT_NODE_VERSION).stamp
# epochs per model: ~10 s (mlp) and ~60 s (cnn) of training on one thread here
MODELS_EPOCHS_mlp := 10
MODELS_EPOCHS_cnn := 2
MODELS_SRC     := models/train.py models/nets.py models/fmnist.py
MODELS_ONNX    := $(MODELS_BUILD)/mlp/model.onnx $(MODELS_BUILD)/cnn/model.onnx
MODELS_DATA    := $(MODELS_BUILD)/data/test_x.npy

TEST_SUITES += test-models-ref test-models
FULL_SUITES += test-models-full

.PHONY: models ort-node test-models-ref test-models test-models-full

ort-node: $(ORT_NODE_STAMP)

$(ORT_NODE_STAMP):
	@mkdir -p $(dir $@)
	@command -v node >/dev/null && command -v npm >/dev/null || \
	    { echo "ort-node: error: node and npm are needed (make deps installs them)" >&2; exit 1; }
	npm install --ignore-scripts --no-audit --no-fund --loglevel=error \
	    --prefix $(BUILD)/node onnxruntime-node@$(ORT_NODE_VERSION) >$(BUILD)/node/npm.log 2>&1 || \
	    { tail -5 $(BUILD)/node/npm.log; echo "ort-node: error: npm install onnxruntime-node@$(ORT_NODE_VERSION) failed (log: $(BUILD)/node/npm.log)" >&2; exit 1; }
	@node -e "require('./$(BUILD)/node/node_modules/onnxruntime-node')" || \
	    { echo "ort-node: error: onnxruntime-node@$(ORT_NODE_VERSION) does not load in node $$(node --version)" >&2; exit 1; }
	@touch $@

models: $(MODELS_ONNX) $(MODELS_DATA)

$(MODELS_DATA): models/data.py models/fmnist.py
	$(MODELS_PY) models/data.py testset $(dir $@)

# model.onnx is written last, so its presence means the whole folder is complete
$(MODELS_ONNX): $(MODELS_BUILD)/%/model.onnx: $(MODELS_SRC)
	nice -n 10 $(MODELS_PY) models/train.py $* --out $(dir $@) --epochs $(MODELS_EPOCHS_$*)

test-models-ref: $(MODELS_ONNX) $(MODELS_DATA) $(ORT_NODE_STAMP)
	@MODELS_PY=$(MODELS_PY) M=$(MODELS_BUILD) sh tests/models/ref.sh

test-models: $(MODELS_ONNX) $(MODELS_DATA) $(ORT_NODE_STAMP) $(TOOLS_DIR)/tpu-compile $(TOOLS_DIR)/tpu-infer
	@MODELS_PY=$(MODELS_PY) M=$(MODELS_BUILD) T=$(TOOLS_DIR) sh tests/models/run.sh test

test-models-full: $(MODELS_ONNX) $(MODELS_DATA) $(ORT_NODE_STAMP) $(TOOLS_DIR)/tpu-compile $(TOOLS_DIR)/tpu-infer
	@MODELS_PY=$(MODELS_PY) M=$(MODELS_BUILD) T=$(TOOLS_DIR) sh tests/models/run.sh full
