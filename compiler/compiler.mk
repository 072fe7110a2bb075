# SPDX-License-Identifier: Apache-2.0
# The ONNX compiler library: build/compiler/libtpuc.a from compiler/src/*.c plus the ONNX
# reader that protoc-c generates at build time from Debian's /usr/include/onnx/onnx.proto
# (libonnx-dev; the schema is not copied into the repository). Public header: compiler/include.

ONNX_PROTO    ?= /usr/include/onnx/onnx.proto
TPUC_GEN_DIR  := $(BUILD)/compiler/onnx
TPUC_PB_C     := $(TPUC_GEN_DIR)/onnx.pb-c.c
TPUC_SRCS     := $(wildcard compiler/src/*.c)
TPUC_OBJS     := $(patsubst compiler/src/%.c,$(BUILD)/compiler/%.o,$(TPUC_SRCS)) \
                 $(BUILD)/compiler/onnx.pb-c.o
TPUC_LIB      := $(BUILD)/compiler/libtpuc.a
TPUC_INC      := -Icompiler/include $(CMODEL_INC)
TPUC_CFLAGS   := $(CFLAGS_COMMON) $(TPUC_INC) -Icompiler/src -I$(TPUC_GEN_DIR)
TPUC_LIBS     := $(TPUC_LIB) $(CMODEL_LIB) -lprotobuf-c -lm

.PHONY: compiler
compiler: $(TPUC_LIB)

$(TPUC_PB_C): $(ONNX_PROTO)
	@mkdir -p $(@D)
	protoc-c --proto_path=$(dir $(ONNX_PROTO)) --c_out=$(@D) $(ONNX_PROTO)

$(TPUC_GEN_DIR)/onnx.pb-c.h: $(TPUC_PB_C)

$(BUILD)/compiler/onnx.pb-c.o: $(TPUC_PB_C)
	$(CC) $(filter-out -Wextra,$(TPUC_CFLAGS)) -Wno-unused-parameter -c $< -o $@

$(BUILD)/compiler/%.o: compiler/src/%.c $(wildcard compiler/src/*.h compiler/include/tpuc/*.h cmodel/include/tpu/*.h) $(TPUC_PB_C)
	@mkdir -p $(@D)
	$(CC) $(TPUC_CFLAGS) -c $< -o $@

$(TPUC_LIB): $(TPUC_OBJS)
	@rm -f $@
	ar rcs $@ $^
