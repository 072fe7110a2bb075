# SPDX-License-Identifier: Apache-2.0
# The ONNX compiler (docs/compiler.md): tests/compiler/run.sh.
.PHONY: test-compiler
TEST_SUITES += test-compiler

test-compiler: $(BUILD)/tools/tpu-compile $(BUILD)/tools/tpu-infer $(BUILD)/tools/tpu-explore $(BUILD)/tools/tpu-as $(GEN) $(CMODEL_LIB)
	sh tests/compiler/run.sh $(BUILD)/test-compiler 1

# ---- issue 32: larger TransformerEncoderLayers (d_model 128; BERT-base's 768 / 12 heads,
#      sequence 128 at N = 128) against PyTorch fp32 (tests/compiler/attn.py full) ----
.PHONY: test-compiler-attn-full
FULL_SUITES += test-compiler-attn-full
test-compiler-attn-full: $(BUILD)/tools/tpu-compile $(BUILD)/tools/tpu-infer
	nice /usr/bin/python3 tests/compiler/attn.py $(BUILD)/test-compiler-attn-full $(BUILD)/tools full

# ---- issue 32: attention masks (causal src_mask float and bool, key_padding_mask, a fully
#      masked row, masked_fill's Where) against PyTorch fp32 (tests/compiler/mask.py; ~8 s) ----
.PHONY: test-compiler-mask
TEST_SUITES += test-compiler-mask
test-compiler-mask: $(BUILD)/tools/tpu-compile $(BUILD)/tools/tpu-infer
	nice /usr/bin/python3 tests/compiler/mask.py $(BUILD)/test-compiler-mask $(BUILD)/tools

# ---- fuzzing the ONNX reader and the passes (libFuzzer, ASan + UBSan; issue 14 item 4) ----
#   make fuzz-onnx [FUZZ_SECONDS=60]   fuzz from the kept corpus (build/fuzz-onnx/corpus)
#   test-compiler-fuzz-replay          (make test) every kept input, crashes found included
ONNXF_DIR   := $(BUILD)/fuzz-onnx
ONNXF_CC    ?= clang
ONNXF_FLAGS := -std=c11 -g -O1 -ffp-contract=off -D_POSIX_C_SOURCE=200809L \
               -fsanitize=address,undefined -fno-sanitize-recover=undefined \
               -Icompiler/include -Icompiler/src -I$(TPUC_GEN_DIR) $(CMODEL_INC) -Icmodel/src
ONNXF_SRCS  := $(TPUC_SRCS) $(TPUC_PB_C) $(CMODEL_SRCS)
ONNXF_BIN   := $(ONNXF_DIR)/fuzz_onnx
FUZZ_SECONDS ?= 60
TEST_SUITES += test-compiler-fuzz-replay
.PHONY: fuzz-onnx test-compiler-fuzz-replay

$(ONNXF_BIN): tests/compiler/fuzz_onnx.c $(ONNXF_SRCS) $(wildcard compiler/src/*.h compiler/include/tpuc/*.h cmodel/include/tpu/*.h)
	@mkdir -p $(@D)
	$(ONNXF_CC) $(ONNXF_FLAGS) -fsanitize=fuzzer $< $(ONNXF_SRCS) -lprotobuf-c -lm -o $@

fuzz-onnx: $(ONNXF_BIN)
	@mkdir -p $(ONNXF_DIR)/corpus $(ONNXF_DIR)/crashes
	@cp -n tests/compiler/fuzz_corpus/* $(ONNXF_DIR)/corpus/ 2>/dev/null || true
	nice -n 10 $(ONNXF_BIN) -malloc_limit_mb=1024 -rss_limit_mb=2048 -timeout=10 \
	    -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -artifact_prefix=$(ONNXF_DIR)/crashes/ $(ONNXF_DIR)/corpus 2>&1 | tee $(ONNXF_DIR)/fuzz.log | \
	    grep -E '^(#[0-9]+ *DONE|stat::number_of_executed_units|==.*ERROR|SUMMARY)' || true
	@! ls $(ONNXF_DIR)/crashes/* >/dev/null 2>&1 || { echo "fuzz-onnx: findings in $(ONNXF_DIR)/crashes"; exit 1; }

test-compiler-fuzz-replay: $(ONNXF_BIN)
	$(ONNXF_BIN) -malloc_limit_mb=1024 -rss_limit_mb=2048 tests/compiler/fuzz_corpus/*

# ---- the Fashion-MNIST models on the RTL board (make test-full): 64 images, N = 16, C = 8 ----
.PHONY: test-compiler-board
FULL_SUITES += test-compiler-board
test-compiler-board: $(BUILD)/tools/tpu-compile $(BUILD)/tools/tpu-infer $(GEN) $(CMODEL_LIB) \
                     $(BUILD)/models/mlp/model.onnx $(BUILD)/models/cnn/model.onnx $(BUILD)/models/data/test_x.npy
	sh tests/compiler/board.sh $(BUILD)/test-compiler-board $(BUILD)/models $(BUILD)/models/data/test_x.npy

# ---- the loop pass (compiler/src/loops.c): planted nests and ordinary streams rolled and
#      expanded again (tests/compiler/loops_test.c) ----
.PHONY: test-compiler-loops
TEST_SUITES += test-compiler-loops
$(BUILD)/tests/loops_test: tests/compiler/loops_test.c $(TPUC_LIB) $(CMODEL_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -Icompiler/include -Icompiler/src $(CMODEL_INC) $< $(TPUC_LIB) $(CMODEL_LIB) -lprotobuf-c -lm -o $@

test-compiler-loops: $(BUILD)/tests/loops_test
	$(BUILD)/tests/loops_test 400

# ---- issue 32, the rest of torchvision: Pad (folded into a Conv/AveragePool, or its own layer),
#      a Concat of 12 and of 65 inputs, ConvTranspose (a DCGAN generator in miniature, 1-D) against
#      PyTorch fp32, and their one-line refusals (tests/compiler/ops32.py; seconds) ----
.PHONY: test-compiler-ops32
TEST_SUITES += test-compiler-ops32
test-compiler-ops32: $(BUILD)/tools/tpu-compile $(BUILD)/tools/tpu-infer
	nice /usr/bin/python3 tests/compiler/ops32.py $(BUILD)/test-compiler-ops32 $(BUILD)/tools

# ---- issue 32, the exact GELU: ONNX Erf (vop erf) alone, every bf16 output correctly rounded,
#      and torch's exact-GELU pattern in a small MLP, against the composed bound and PyTorch
#      fp32 (also on a Conv output), at N = 4 and 8 (tests/compiler/erf.py; ~10 s) ----
.PHONY: test-compiler-erf
TEST_SUITES += test-compiler-erf
test-compiler-erf: $(BUILD)/tools/tpu-compile $(BUILD)/tools/tpu-infer
	nice /usr/bin/python3 tests/compiler/erf.py $(BUILD)/test-compiler-erf $(BUILD)/tools

# ---- issue 32, ShuffleNetV2, MNASNet, ConvNeXt, ViT: channel_shuffle, x.chunk and a Slice of
#      the channels of Conv outputs (DMA channel copies), x.mean([2, 3]) as a GlobalAveragePool,
#      ConvNeXt's permutes, ViT's token rows, against the composed bound and PyTorch fp32
#      (tests/compiler/chan32.py; ~7 s) ----
.PHONY: test-compiler-chan32
TEST_SUITES += test-compiler-chan32
test-compiler-chan32: $(BUILD)/tools/tpu-compile $(BUILD)/tools/tpu-infer
	nice /usr/bin/python3 tests/compiler/chan32.py $(BUILD)/test-compiler-chan32 $(BUILD)/tools

# ---- issue 32, LSTM / GRU / RNN (fold_rnn.c: unrolled over the sequence): torch 1.13's
#      classifiers at opset 14 against the exact value, PyTorch fp32 and ONNX Runtime within a
#      tolerance from every rounding site's first-order effect; wrong gate orders rejected; the
#      refusals; two on the N = 4 core's RTL (tests/compiler/rnn.py; ~30 s) ----
.PHONY: test-compiler-rnn
TEST_SUITES += test-compiler-rnn
test-compiler-rnn: $(BUILD)/tools/tpu-compile $(BUILD)/tools/tpu-infer $(GEN) $(CMODEL_LIB)
	nice /usr/bin/python3 tests/compiler/rnn.py $(BUILD)/test-compiler-rnn $(BUILD)/tools

# ---- issue 32, Swin-T and MaxViT-T: Swin's shift mask (Range, ScatterND: folded) bit-exact,
#      Einsum as MaxViT and attention write it, MaxViT's window partition of a Conv output,
#      torchvision's Swin blocks and patch merging in miniature against PyTorch fp32, and
#      unsupported equations refused with one line (tests/compiler/swin.py; ~20 s) ----
.PHONY: test-compiler-swin
TEST_SUITES += test-compiler-swin
test-compiler-swin: $(BUILD)/tools/tpu-compile $(BUILD)/tools/tpu-infer
	nice /usr/bin/python3 tests/compiler/swin.py $(BUILD)/test-compiler-swin $(BUILD)/tools
