# Benchmarks (`make bench`): figures and ratios, never pass/fail on speed. Record what you
# measure in bench/RESULTS.md together with the command that produced it.

BENCH_DIR := $(BUILD)/bench

.PHONY: bench bench-model

# C model matmul (fast and integer paths) vs a single-threaded OpenBLAS sgemm.
$(BENCH_DIR)/matmul_speed: bench/matmul_speed.c $(CMODEL_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -O3 $(CMODEL_INC) $< -o $@ $(CMODEL_LIB) -lopenblas

bench-model: $(BENCH_DIR)/matmul_speed
	$(BENCH_DIR)/matmul_speed 128

bench: deps
	@sh bench/run.sh
include bench/synth.mk
include bench/core.mk
include bench/board.mk

# The ONNX compiler's figures (bench/compiler.sh) and host speed against PyTorch and ORT
# (bench/models.sh, from tests/models).
.PHONY: bench-compiler
bench-compiler: $(MODELS_ONNX) $(TOOLS_DIR)/tpu-compile $(TOOLS_DIR)/tpu-infer $(BUILD)/sim/tpu-board-cmp
	@M=$(MODELS_BUILD) T=$(TOOLS_DIR) sh bench/compiler.sh
include bench/models.mk

# Training (docs/training.md): the tutorial's runs on the board model beside PyTorch fp32
# (bench/train.sh; make bench-train-rtl, bench/board.mk, runs one CNN step on the RTL board).
.PHONY: bench-train
bench-train: $(TOOLS_DIR)/tpu-train $(TOOLS_DIR)/tpu-compile
	@sh bench/train.sh

# The article's comparison (issue 18; bench/article.sh): torchvision VGG-19, ResNet-50 and
# ResNet-152 at 224x224, predicted inference images/s at batch 32 and 128 on N = 128, C = 8 at
# 700 MHz and on the fastest configuration tpu-explore finds for an Alveo U250, beside the
# article's TPU v2-8 training figures; then that N x C with the unified buffer swept (11 min on
# 2 cores, bench/RESULTS.md "Article comparison"); part 4 their training steps; part 5 the
# article's own Keras VGG19, ResNet152V2 and Xception (models/article.py) at 192x192, inference
# and training step at batch 128 (~40 min, most of it VGG19's step; bench/RESULTS.md "The
# article's own models").
# One 224x224 ResNet-50 image on the verilated N = 128 core (bench/resnet50_rtl.sh; issue 18).
.PHONY: bench-resnet50-rtl
bench-resnet50-rtl: $(TOOLS_DIR)/tpu-compile $(TOOLS_DIR)/tpu-infer $(GEN) $(CMODEL_LIB)
	@sh bench/resnet50_rtl.sh $(BUILD)/bench/resnet50_rtl

.PHONY: bench-article
bench-article: $(TOOLS_DIR)/tpu-compile $(TOOLS_DIR)/tpu-explore
	@sh bench/article.sh $(BUILD)/bench/article

# Issue 32's census: one torchvision 0.14 model per classification family (opset 14, random
# weights) through tpu-compile --report-only (tests/zoo/families.py; the table in
# bench/RESULTS.md "torchvision families (issue 32)"; a few minutes, most of it torch's export).
.PHONY: bench-families
bench-families: $(TOOLS_DIR)/tpu-compile
	nice /usr/bin/python3 tests/zoo/families.py $(BENCH_DIR)/families --build $(BUILD)
