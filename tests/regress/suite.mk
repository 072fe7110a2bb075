# SPDX-License-Identifier: Apache-2.0
# Regressions (issue 16 "Regressions on an existing engine"): constrained-random programs
# (tpu-mkprog random: loop nests and index registers included, docs/isa.md "Loops") on the C
# model and on the verilated core, traces compared; the same
# programs with X-initialisation (+verilator+rand+reset+2, random +verilator+seed+S: traces
# identical to the model's); AXI back-pressure (--stall P, random --seed) and AXI latency
# (--axi-latency L, 1 .. 1000 cycles, with back-pressure); random-board jobs on
# small boards, also under link back-pressure (--link-stall) and with injected link faults.
# One job per run, listed by tests/regress/regress.py, run by GNU parallel or as a Slurm job
# array; resumable (a job that passed is not rerun); a summary with the replay
# command of each failure and JUnit XML. Every job also records its functional coverage
# (build/tools/tpu-cover, tests/regress/tpu_cover.c: coverpoints over the program and the
# model's trace, docs/verification.md); make regress prints the table of bins hit and the
# holes ($(REGRESS_DIR)/coverage.txt).
#   make regress [SEEDS=20]  build each configuration once, run the list locally
#                            ($(REGRESS_DIR): list.txt, results/, summary.txt, junit.xml)
#   make regress-slurm [SEEDS=..]  the same list as an sbatch script (an array of K tasks,
#                            task k runs job k): $(REGRESS_DIR)/regress.sbatch
#   make regress-report      the summary and JUnit XML of the results so far (after Slurm)
#   test-regress       (make test)      a small regression (N = 4, 10 seeds, 3 X-init seeds,
#                                       a back-pressure and a latency seed; a random-board
#                                       pair) with a deliberately failing job: counts, the
#                                       failure's replay command, JUnit XML parsed, a rerun
#                                       skips what passed (~15 s)
#   test-regress-slurm (make test)      a single-node Slurm on localhost (munge, slurmctld,
#                                       slurmd) runs a 4-task array of the list (~10 s);
#                                       SKIP where Slurm is not installed or cannot start
# Variables: SEEDS (programs per N), REGRESS_NS (MXU sizes, <= 8), REGRESS_XSEEDS (X-init runs
# per program), REGRESS_STALL_SEEDS (back-pressure runs per program), REGRESS_LAT_SEEDS
# (AXI latency runs per program), REGRESS_BOARDS
# (N:C:TOPOLOGY,...), REGRESS_BOARD_SEEDS, REGRESS_LINK_SEEDS (per board program: jobs under
# link back-pressure and jobs with an injected link fault, each; docs/board.md "Link faults"),
# REGRESS_BASE_SEED, REGRESS_JOBS (parallel jobs, 2),
# REGRESS_DIR.

SEEDS               ?= 20
REGRESS_NS          ?= 2 4 8
REGRESS_XSEEDS      ?= 2
REGRESS_STALL_SEEDS ?= 1
REGRESS_LAT_SEEDS   ?= 1
REGRESS_BOARDS      ?= 4:2:ring,4:4:torus:2x2
REGRESS_BOARD_SEEDS ?= 4
REGRESS_LINK_SEEDS  ?= 1
REGRESS_BASE_SEED   ?= 1
REGRESS_JOBS        ?= 2
REGRESS_DIR         ?= $(BUILD)/regress
REGRESS_LIST_ARGS = --seeds $(SEEDS) --ns "$(REGRESS_NS)" --xseeds $(REGRESS_XSEEDS) \
                    --stall-seeds $(REGRESS_STALL_SEEDS) --latency-seeds $(REGRESS_LAT_SEEDS) --boards "$(REGRESS_BOARDS)" \
                    --board-seeds $(REGRESS_BOARD_SEEDS) --link-seeds $(REGRESS_LINK_SEEDS) \
                    --base-seed $(REGRESS_BASE_SEED)

TEST_SUITES += test-regress test-regress-slurm
# the links' back-pressure and fault tests (the target is in sim/board.mk)
TEST_SUITES += test-board-linkfault
FULL_SUITES += test-board-linkfault-full

# tpu-cover: functional coverage of the jobs (tests/regress/tpu_cover.c, on the model's API)
TPU_COVER := $(BUILD)/tools/tpu-cover
$(TPU_COVER): tests/regress/tpu_cover.c $(CMODEL_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(CMODEL_INC) $< -o $@ $(CMODEL_LIB) -lm

.PHONY: regress regress-build regress-slurm regress-report test-regress test-regress-slurm

# Each configuration once: one verilated core per N (sim/core.mk), one assembled board per
# REGRESS_BOARDS entry (sim/board_build.sh), under nice, 2 compile jobs.
regress-build:
	@nice -n 10 $(MAKE) --no-print-directory $(GEN) $(CMODEL_LIB) $(TPU_MKPROG) $(TPU_RUN) \
	    $(TPU_BOARD_RUN) $(CORE_CMP) $(BOARD_CMP) $(TPU_COVER)
	@for n in $(REGRESS_NS); do \
	    nice -n 10 $(MAKE) -j2 --no-print-directory $(call core_tb,$$n) || exit 1; done
	@for b in $$(echo "$(REGRESS_BOARDS)" | tr ',' ' '); do \
	    n=$${b%%:*}; r=$${b#*:}; c=$${r%%:*}; t=$${r#*:}; \
	    BUILD=$(BUILD) GEN=$(GEN) VERILATOR=$(VERILATOR) BOARD_JOBS=2 \
	    nice -n 10 sh sim/board_build.sh asm $$n $$c $$t 64 2 >/dev/null || exit 1; done

regress: regress-build
	@REGRESS_JOBS=$(REGRESS_JOBS) sh tests/regress/regress.sh $(REGRESS_DIR) $(REGRESS_LIST_ARGS)

regress-slurm: regress-build
	@mkdir -p $(REGRESS_DIR)/results
	@/usr/bin/python3 tests/regress/regress.py list $(REGRESS_LIST_ARGS) -o $(REGRESS_DIR)/list.txt
	@/usr/bin/python3 tests/regress/regress.py sbatch $(REGRESS_DIR)/list.txt $(REGRESS_DIR)/results \
	    -o $(REGRESS_DIR)/regress.sbatch
	@echo "submit: sbatch $(REGRESS_DIR)/regress.sbatch; when it is done: make regress-report REGRESS_DIR=$(REGRESS_DIR)"

regress-report: $(TPU_COVER)
	@/usr/bin/python3 tests/regress/regress.py report $(REGRESS_DIR)/list.txt $(REGRESS_DIR)/results \
	    --summary $(REGRESS_DIR)/summary.txt --junit $(REGRESS_DIR)/junit.xml; st=$$?; \
	$(TPU_COVER) report --holes 12 -o $(REGRESS_DIR)/coverage.txt $(REGRESS_DIR)/results && \
	    cat $(REGRESS_DIR)/coverage.txt; exit $$st

test-regress:
	@$(MAKE) --no-print-directory regress-build REGRESS_NS=4 REGRESS_BOARDS=4:2:ring
	@sh tests/regress/test.sh $(BUILD)/tests/regress

test-regress-slurm:
	@$(MAKE) --no-print-directory regress-build REGRESS_NS=4 REGRESS_BOARDS=
	@sh tests/regress/slurm_test.sh $(BUILD)/tests/regress_slurm
