# SPDX-License-Identifier: Apache-2.0
# Co-simulation of the board (sim/board_tb.cpp, SystemC; docs/board.md "Board jobs, tools and
# co-simulation").
#   make build/sim/tpu-board-cmp   compares two board runs' outputs (traces and dumps per core)
#   make board-tb BOARD="N C T W D" [BOARD_MODE=asm|flat]   builds the harness of one board
#                                  (sim/board_build.sh: asm = C verilated tpu_cores, verilated
#                                  once per N and W, on a verilated tpu_noc; flat = one
#                                  verilated tpu_board) and prints its path
#   make board-run                 the board-level main command: the default board (N = 16,
#                                  C = 8, torus 2x4, W = 64, D = 2) runs the dptrain job,
#                                  RTL against the model: PASS/FAIL, cycles, utilisation
# Builds are incremental and cached (OBJCACHE/ccache): build/sim/board_core_N<N>_W<W>/,
# build/sim/board_noc_<C>_<topo>_W<W>_D<D>/, build/sim/board_asm_.../, build/sim/board_flat_.../.

BOARD_CMP     := $(SIM_DIR)/tpu-board-cmp
TPU_BOARD_RUN ?= $(BUILD)/tools/tpu-board-run
BOARD_MODE    ?= asm
BOARD         ?= $(MXU) $(CORES) torus:2x4 64 2

$(BOARD_CMP): sim/board_cmp.c sim/core_cmp.c $(CMODEL_LIB) $(wildcard cmodel/include/tpu/*.h)
	@mkdir -p $(@D)
	$(CC) $(SIM_CFLAGS) -o $@ sim/board_cmp.c $(CMODEL_LIB) -lm

# The harness's prerequisites: gen, the model library (and sim/board_build.sh's own checks).
BOARD_DEPS := $(GEN) $(CMODEL_LIB) $(BOARD_CMP) $(TPU_BOARD_RUN) $(TPU_MKPROG)

.PHONY: board-tb board-run
board-tb: $(BOARD_DEPS)
	@BUILD=$(BUILD) GEN=$(GEN) VERILATOR=$(VERILATOR) sh sim/board_build.sh $(BOARD_MODE) $(BOARD)

board-run: deps
	@$(MAKE) --no-print-directory -s $(BOARD_DEPS)
	@echo "co-simulating the dptrain job (tpu-mkprog dptrain) on the board N=$(MXU), C=8, torus 2x4 (SystemC, verilated cores and NoC) against the model"
	@BUILD=$(BUILD) GEN=$(GEN) VERILATOR=$(VERILATOR) BOARD_TB_ARGS="$(RUN_ARGS)" \
		sh sim/board_case.sh $(MXU) 8 torus:2x4 $(SIM_DIR)/board_run 0 dptrain

# Link back-pressure and link faults (docs/board.md "Link faults"; sim/board_linkfault.sh):
# a random-board job under --link-stall 10 and 50, each fault kind (flip, flip2, drop, a long
# stall) on every link, and faults with back-pressure: traces and dumps identical to the
# model's, the faults reported and replayed by the links; a permanent fault makes link 0
# dead, and board_tb says so and exits 1. Registered in tests/regress/suite.mk.
#   test-board-linkfault       (make test)      N = 4, ring of 2 (~5 s after the build)
#   test-board-linkfault-full  (make test-full) also a 2x2 torus and two more seeds
.PHONY: test-board-linkfault test-board-linkfault-full
test-board-linkfault: $(BOARD_DEPS)
	@BUILD=$(BUILD) GEN=$(GEN) VERILATOR=$(VERILATOR) BOARD_JOBS=2 \
	    nice -n 10 sh sim/board_linkfault.sh 4 2 ring $(BUILD)/tests/linkfault/ring2

test-board-linkfault-full: test-board-linkfault
	@set -e; for s in 5 11; do BUILD=$(BUILD) GEN=$(GEN) VERILATOR=$(VERILATOR) BOARD_JOBS=2 \
	    nice -n 10 sh sim/board_linkfault.sh 4 2 ring $(BUILD)/tests/linkfault/ring2_s$$s 20,80 random-board $$s; done
	@BUILD=$(BUILD) GEN=$(GEN) VERILATOR=$(VERILATOR) BOARD_JOBS=2 \
	    nice -n 10 sh sim/board_linkfault.sh 4 4 torus:2x2 $(BUILD)/tests/linkfault/torus2x2 10,50,80
