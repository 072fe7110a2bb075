# C model library: build/cmodel/libtpucmodel.a from every cmodel/src/*.c.
# Public headers are under cmodel/include (include as "tpu/...").

CMODEL_SRCS := $(wildcard cmodel/src/*.c)
CMODEL_OBJS := $(patsubst cmodel/src/%.c,$(BUILD)/cmodel/%.o,$(CMODEL_SRCS))
CMODEL_LIB  := $(BUILD)/cmodel/libtpucmodel.a
CMODEL_INC  := -Icmodel/include
# The fast matmul path may use host SIMD; -ffp-contract=off (CFLAGS_COMMON) keeps it unfused.
CMODEL_CFLAGS := $(CFLAGS_COMMON) $(CMODEL_INC) -Icmodel/src -O3

.PHONY: cmodel
cmodel: $(CMODEL_LIB)

$(BUILD)/cmodel/%.o: cmodel/src/%.c $(wildcard cmodel/src/*.h cmodel/include/tpu/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CMODEL_CFLAGS) -c $< -o $@

$(CMODEL_LIB): $(CMODEL_OBJS)
	@rm -f $@
	ar rcs $@ $^
