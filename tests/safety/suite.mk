# SPDX-License-Identifier: Apache-2.0
# test-safety: a user's files are never lost (issue 28): output folders and files, temporary
# files on an interrupt, outputs that are inputs, the compiled model's contract, diverged
# runs, exit codes. One script per group of tools, each run on its own scratch folder:
#   compile.sh   tpu-compile -o, tpu-infer (model.txt cross-checks under ASan, --output, --work)
#   train.sh     tpu-train (temporaries, outputs, non-finite losses)
#   tools.sh     gen's manifest, tpu-as, tpu-explore
.PHONY: test-safety
TEST_SUITES += test-safety

SAFETY_DEPS := $(BUILD)/tools/tpu-compile $(BUILD)/tools/tpu-infer $(BUILD)/tools/tpu-train \
               $(BUILD)/tools/tpu-as $(BUILD)/tools/tpu-run $(BUILD)/tools/tpu-explore $(GEN)

test-safety: $(SAFETY_DEPS)
	sh tests/safety/run.sh $(BUILD)/test-safety $(BUILD)/tools $(GEN)

# tpu-infer built with AddressSanitizer and UBSan (the tool's own code instrumented, every
# malloc and memcpy checked): compile.sh runs it on model.txt files with bad fields
SAFETY_ASAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
$(BUILD)/safety/tpu-infer-asan: tools/tpu_infer.c $(TPUC_LIB) $(CMODEL_LIB)
	@mkdir -p $(@D)
	$(CC) $(TOOLS_CFLAGS) $(SAFETY_ASAN) -Icompiler/include $< -o $@ $(TPUC_LIBS)
test-safety: $(BUILD)/safety/tpu-infer-asan
