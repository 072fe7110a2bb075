# SPDX-License-Identifier: Apache-2.0
# Command-line tools of the core: build/tools/tpu-as (assembler), tpu-dis (disassembler),
# tpu-mkprog (test program generator), each linked with the C model library.

TOOLS_DIR    := $(BUILD)/tools
TOOLS_CFLAGS := $(CFLAGS_COMMON) $(CMODEL_INC) -Isim
TOOLS        := $(TOOLS_DIR)/tpu-as $(TOOLS_DIR)/tpu-dis $(TOOLS_DIR)/tpu-mkprog \
                $(TOOLS_DIR)/tpu-run $(TOOLS_DIR)/tpu-board-run
TOOLS_SIM_LIB = $(BUILD)/sim/libtpusim.a

.PHONY: tools
tools: $(TOOLS)

$(TOOLS_DIR)/tpu-as: tools/tpu_as.c $(CMODEL_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(TOOLS_CFLAGS) $< -o $@ $(CMODEL_LIB) -lm

$(TOOLS_DIR)/tpu-dis: tools/tpu_dis.c $(CMODEL_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(TOOLS_CFLAGS) $< -o $@ $(CMODEL_LIB) -lm

$(TOOLS_DIR)/tpu-mkprog: tools/tpu_mkprog.c tools/tpu_mkprog_board.c tools/tpu_mkprog_board.h \
                         $(CMODEL_LIB) $(TOOLS_SIM_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(TOOLS_CFLAGS) $(filter %.c,$^) -o $@ $(TOOLS_SIM_LIB) $(CMODEL_LIB) -lm

# tpu-run: the core's C model runner (helper M)
$(TOOLS_DIR)/tpu-run: tools/tpu_run.c $(CMODEL_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(TOOLS_CFLAGS) $< -o $@ $(CMODEL_LIB) -lm

# tpu-board-run: the board's C model runner (docs/board.md, helper M1)
$(TOOLS_DIR)/tpu-board-run: tools/tpu_board_run.c $(CMODEL_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(TOOLS_CFLAGS) $< -o $@ $(CMODEL_LIB) -lm

# tpu-compile (ONNX -> program) and tpu-infer (run it): the compiler library, docs/compiler.md
TOOLS += $(TOOLS_DIR)/tpu-compile $(TOOLS_DIR)/tpu-infer
tools: $(TOOLS_DIR)/tpu-compile $(TOOLS_DIR)/tpu-infer

$(TOOLS_DIR)/tpu-compile: tools/tpu_compile.c $(TPUC_LIB) $(CMODEL_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(TOOLS_CFLAGS) -Icompiler/include $< -o $@ $(TPUC_LIBS)

$(TOOLS_DIR)/tpu-infer: tools/tpu_infer.c $(TPUC_LIB) $(CMODEL_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(TOOLS_CFLAGS) -Icompiler/include $< -o $@ $(TPUC_LIBS)
