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
