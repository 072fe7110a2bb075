# VPU numerics (docs/vpu.md): the model's VPU functions against MPFR and the host FPU.
#   test-vpu-model      (make test)  exhaustive bf16 accuracy bounds, special values,
#                                    fp32_mul/max/min, reductions, softmax
#   bench-vpu-accuracy  (by hand)    the accuracy table of docs/vpu.md

VPU_TEST_BIN  := $(BUILD)/tests/vpu/test_vpu_model
VPU_BENCH_BIN := $(BUILD)/bench/vpu_accuracy
VPU_REF_SRC   := tests/vpu/vpu_ref.c
VPU_TEST_SRCS := $(sort $(wildcard tests/vpu/test_*.c))

TEST_SUITES += test-vpu-model

.PHONY: test-vpu-model bench-vpu-accuracy

$(VPU_TEST_BIN): $(VPU_TEST_SRCS) $(VPU_REF_SRC) tests/vpu/vpu_ref.h tests/vpu/vpu_test.h $(CMODEL_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -Itests/vpu -O2 $(VPU_TEST_SRCS) $(VPU_REF_SRC) -o $@ $(TEST_LIBS)

$(VPU_BENCH_BIN): bench/vpu_accuracy.c $(VPU_REF_SRC) tests/vpu/vpu_ref.h $(CMODEL_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -O2 bench/vpu_accuracy.c $(VPU_REF_SRC) -o $@ $(TEST_LIBS)

test-vpu-model: $(VPU_TEST_BIN)
	$(VPU_TEST_BIN)

bench-vpu-accuracy: $(VPU_BENCH_BIN)
	$(VPU_BENCH_BIN)
