# SPDX-License-Identifier: Apache-2.0
# The generator: build/gen/gen from gen/*.c, and the rtl/ targets.
#   make build/gen/gen   build gen
#   make rtl             regenerate rtl/ and constraints/ in place (commit the result)
#   make check-rtl       fail if rtl/ or constraints/ differs from what gen produces now

GEN_SRCS := $(wildcard gen/*.c)
GEN_OBJS := $(patsubst gen/%.c,$(BUILD)/gen/%.o,$(GEN_SRCS))
GEN      := $(BUILD)/gen/gen
# gen writes the VPU's ROMs with the C model's table functions (vpu_rom_exp2, vpu_rom_recip):
# it links the model library. (Named literally: cmodel.mk is included after this file.)
GEN_CMODEL_LIB := $(BUILD)/cmodel/libtpucmodel.a
GEN_ARGS := --mxu $(MXU) --cores $(CORES)
# Where the default configuration lives: the RTL (and its FuseSoC core) in rtl/, the FPGA
# constraints in constraints/ (tpu.core refers to them as ../constraints/...).
GEN_OUT  := -o rtl --constraints-dir constraints

$(BUILD)/gen/%.o: gen/%.c $(wildcard gen/*.h) $(wildcard cmodel/include/tpu/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -Icmodel/include -c $< -o $@

$(GEN): $(GEN_OBJS) $(GEN_CMODEL_LIB)
	$(CC) $(CFLAGS_COMMON) -o $@ $^

# Run from the repository root so that the recorded command line is exactly
# "gen --mxu $(MXU) --cores $(CORES) -o rtl --constraints-dir constraints".
rtl: $(GEN)
	$(GEN) $(GEN_ARGS) $(GEN_OUT)

# Regenerate with the same arguments, from a temporary directory so that the recorded
# command line matches, and compare with the committed rtl/ and constraints/ (a file gen no
# longer writes counts as a difference too).
check-rtl: $(GEN)
	@tmp=$$(mktemp -d "$${TMPDIR:-/tmp}/check-rtl.XXXXXX") && \
	gen="$$(cd $(dir $(GEN)) && pwd)/gen" && \
	( cd "$$tmp" && "$$gen" $(GEN_ARGS) $(GEN_OUT) ) && \
	if diff -r "$$tmp/rtl" rtl && diff -r "$$tmp/constraints" constraints; then \
		echo "check-rtl: rtl/ and constraints/ match gen $(GEN_ARGS) $(GEN_OUT)"; rm -rf "$$tmp"; \
	else \
		rm -rf "$$tmp"; \
		echo "check-rtl: rtl/ or constraints/ differs from what gen $(GEN_ARGS) $(GEN_OUT) produces; run 'make rtl' and commit both" >&2; \
		exit 1; \
	fi
