# SPDX-License-Identifier: Apache-2.0
# The generator: build/gen/gen from gen/*.c, and the rtl/ targets.
#   make build/gen/gen   build gen
#   make rtl             regenerate rtl/ in place (commit the result)
#   make check-rtl       fail if rtl/ differs from what gen produces now

GEN_SRCS := $(wildcard gen/*.c)
GEN_OBJS := $(patsubst gen/%.c,$(BUILD)/gen/%.o,$(GEN_SRCS))
GEN      := $(BUILD)/gen/gen
# gen writes the VPU's ROMs with the C model's table functions (vpu_rom_exp2, vpu_rom_recip):
# it links the model library. (Named literally: cmodel.mk is included after this file.)
GEN_CMODEL_LIB := $(BUILD)/cmodel/libtpucmodel.a
GEN_ARGS := --mxu $(MXU) --cores $(CORES)

$(BUILD)/gen/%.o: gen/%.c $(wildcard gen/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -Icmodel/include -c $< -o $@

$(GEN): $(GEN_OBJS) $(GEN_CMODEL_LIB)
	$(CC) $(CFLAGS_COMMON) -o $@ $^

# Run from the repository root so that the recorded command line is exactly
# "gen --mxu $(MXU) --cores $(CORES) -o rtl".
rtl: $(GEN)
	$(GEN) $(GEN_ARGS) -o rtl

# Regenerate with the same arguments, from a temporary directory so that the recorded
# command line matches, and compare with the committed rtl/.
check-rtl: $(GEN)
	@tmp=$$(mktemp -d "$${TMPDIR:-/tmp}/check-rtl.XXXXXX") && \
	gen="$$(cd $(dir $(GEN)) && pwd)/gen" && \
	( cd "$$tmp" && "$$gen" $(GEN_ARGS) -o rtl ) && \
	if diff -r "$$tmp/rtl" rtl; then \
		echo "check-rtl: rtl/ matches gen $(GEN_ARGS)"; rm -rf "$$tmp"; \
	else \
		rm -rf "$$tmp"; \
		echo "check-rtl: rtl/ differs from what gen $(GEN_ARGS) -o rtl produces; run 'make rtl' and commit rtl/" >&2; \
		exit 1; \
	fi
