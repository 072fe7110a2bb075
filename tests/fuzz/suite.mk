# SPDX-License-Identifier: Apache-2.0
# Fuzzing of every parser (issue 16): libFuzzer harnesses built with clang, AddressSanitizer
# and UndefinedBehaviorSanitizer, on the model library compiled the same way.
#   make fuzz [FUZZ_SECONDS=60] [FUZZ_TARGETS="asm npy"]   fuzz each target that long, one
#       at a time, under nice -n 10; the working corpus is build/fuzz/corpus/<t> (seeded from
#       tests/fuzz/corpus/<t>), crashes go to build/fuzz/crashes/<t>-*; the executions per
#       target are printed (and in build/fuzz/<t>.log)
#   test-fuzz-replay   (make test) every kept input of tests/fuzz/corpus/<t>/ -- the seeds and
#       every crash found so far -- run once through its target; the .npy corpus is also
#       checked against numpy (tests/fuzz/npy_numpy.sh), and 3 x 4000 random headers
#       (tests/fuzz/npy_headers.py, fixed seeds): never accepted here when numpy rejects
# Targets: asm (assembler + disassemble/assemble round trip + the sequencer over the program's
# loops; dictionary tests/fuzz/asm.dict), prog (binary program loader +
# round trip), npy (.npy reader, memory and file), args (@FILE, option scanner, host
# options), trace (MXU and core trace readers), gen (gen's command line).

FUZZ_DIR     := $(BUILD)/fuzz
FUZZ_CC      ?= clang
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS  := -std=c11 -Wall -Wextra -Werror -g -O1 -ffp-contract=off \
                -D_POSIX_C_SOURCE=200809L $(FUZZ_SAN) $(CMODEL_INC) -Isim -Igen
FUZZ_TARGETS ?= asm prog npy args trace gen
FUZZ_SECONDS ?= 60
FUZZ_CM_OBJS := $(patsubst cmodel/src/%.c,$(FUZZ_DIR)/cmodel/%.o,$(CMODEL_SRCS))
FUZZ_GEN_OBJS := $(FUZZ_DIR)/gen/config.o $(FUZZ_DIR)/gen/strbuf.o
FUZZ_BINS    := $(patsubst %,$(FUZZ_DIR)/fuzz_%,$(FUZZ_TARGETS))
# -malloc_limit_mb: an input must never make a reader allocate what its header claims
FUZZ_OPTS    := -malloc_limit_mb=512 -rss_limit_mb=2048 -timeout=10
# the assembler's tokens (mnemonics, keys, loop/stride/label/register syntax)
FUZZ_OPTS_asm := -dict=tests/fuzz/asm.dict

TEST_SUITES += test-fuzz-replay

.PHONY: fuzz fuzz-build test-fuzz-replay

$(FUZZ_DIR)/cmodel/%.o: cmodel/src/%.c $(wildcard cmodel/src/*.h cmodel/include/tpu/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -Icmodel/src -c $< -o $@

$(FUZZ_DIR)/gen/%.o: gen/%.c $(wildcard gen/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_DIR)/trace_cmp_lib.o: sim/trace_cmp_lib.c sim/trace_cmp.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_DIR)/fuzz_trace: $(FUZZ_DIR)/trace_cmp_lib.o sim/core_cmp.c
$(FUZZ_DIR)/fuzz_trace: FUZZ_EXTRA = $(FUZZ_DIR)/trace_cmp_lib.o
$(FUZZ_DIR)/fuzz_gen: $(FUZZ_GEN_OBJS) gen/main.c
$(FUZZ_DIR)/fuzz_gen: FUZZ_EXTRA = $(FUZZ_GEN_OBJS)

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_common.h $(FUZZ_CM_OBJS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -Itests/fuzz $< $(FUZZ_EXTRA) $(FUZZ_CM_OBJS) \
	    -lm -o $@

$(FUZZ_DIR)/fuzz_npy_check: tests/fuzz/npy_check.c $(CMODEL_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(CMODEL_INC) $< -o $@ $(CMODEL_LIB) -lm

fuzz-build: $(FUZZ_BINS)

# One target at a time, niced: the machine is shared. The corpus grows in build/fuzz/;
# copy a crash (and a few small new seeds) into tests/fuzz/corpus/<t>/ to keep it.
fuzz: $(FUZZ_BINS)
	@for t in $(FUZZ_TARGETS); do \
	    mkdir -p $(FUZZ_DIR)/corpus/$$t $(FUZZ_DIR)/crashes; \
	    cp -n tests/fuzz/corpus/$$t/* $(FUZZ_DIR)/corpus/$$t/ 2>/dev/null; \
	    echo "== fuzz_$$t: $(FUZZ_SECONDS) s"; \
	    nice -n 10 $(FUZZ_DIR)/fuzz_$$t $(FUZZ_OPTS) $(FUZZ_OPTS_$$t) \
	        -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	        -artifact_prefix=$(FUZZ_DIR)/crashes/$$t- $(FUZZ_DIR)/corpus/$$t \
	        >$(FUZZ_DIR)/$$t.log 2>&1; st=$$?; \
	    grep -E '^stat::number_of_executed_units|^stat::new_units_added' $(FUZZ_DIR)/$$t.log; \
	    [ $$st -eq 0 ] || { echo "fuzz_$$t: FOUND a failure (exit $$st): $$(ls $(FUZZ_DIR)/crashes/$$t-* 2>/dev/null)"; \
	        grep -m3 -E 'ERROR|SUMMARY|round trip|abort' $(FUZZ_DIR)/$$t.log; }; \
	done

# Replays every kept input once (no fuzzing): the seeds and every crash found so far.
test-fuzz-replay: $(FUZZ_BINS) $(FUZZ_DIR)/fuzz_npy_check
	@for t in $(FUZZ_TARGETS); do \
	    files=$$(find tests/fuzz/corpus/$$t -type f | sort); \
	    n=$$(echo "$$files" | grep -c .); \
	    $(FUZZ_DIR)/fuzz_$$t $(FUZZ_OPTS) $(FUZZ_OPTS_$$t) -runs=0 $$files \
	        >$(FUZZ_DIR)/replay-$$t.log 2>&1 || \
	        { echo "test-fuzz-replay: FAIL: fuzz_$$t"; tail -30 $(FUZZ_DIR)/replay-$$t.log; exit 1; }; \
	    echo "test-fuzz-replay: fuzz_$$t: $$n inputs replayed, no failure"; \
	done
	@sh tests/fuzz/npy_numpy.sh $(FUZZ_DIR)/fuzz_npy_check tests/fuzz/corpus/npy
	@py=; for p in python3 /usr/bin/python3; do $$p -c 'import numpy' 2>/dev/null && { py=$$p; break; }; done; \
	if [ -n "$$py" ]; then for s in 1 2 3; do \
	    $$py tests/fuzz/npy_headers.py $(FUZZ_DIR)/fuzz_npy_check 4000 $$s || exit 1; done; \
	else echo "npy_headers.py: numpy cannot be imported: skipped"; fi

# the sanitised objects are kept between builds (not intermediate files to delete)
.SECONDARY: $(FUZZ_CM_OBJS) $(FUZZ_GEN_OBJS) $(FUZZ_DIR)/trace_cmp_lib.o
