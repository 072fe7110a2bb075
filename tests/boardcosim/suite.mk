# SPDX-License-Identifier: Apache-2.0
# The board top and the board co-simulation (docs/board.md "The board top (tpu_board)" and
# "Board jobs, tools and co-simulation"; sim/board_tb.cpp, sim/board_case.sh, tpu-board-cmp).
#   test-board-lint   (make test)  gen's tpu_board at N = 2, C = 2 ring and C = 4 torus:2x2
#                                  (plus C = 3 ring: a window with no core; C = 2 ring with
#                                  --axi-data-bits 256): verilator
#                                  --lint-only -Wall and iverilog -g2012, both silent
#   test-board-cosim  (make test)  board_tb (assembled: verilated cores on a verilated NoC)
#                                  against tpu-board-run at N = 4 on C = 2 ring, C = 4
#                                  torus:2x2, C = 8 torus:2x4 and C = 4 ring, kinds allreduce,
#                                  bcast, sendrecv, barrier, dptrain, random-board (also on the
#                                  two N = 3 boards), --stall 0 and 30: every
#                                  core's trace and dumps identical (and at stall 0 every
#                                  core's CYCLES equal to the model's for allreduce, dptrain,
#                                  sendrecv, barrier, bcast but on 2x4, and collall on the
#                                  ring of 3); collall at N = 3 with
#                                  W = 128 on C = 3 ring (D = 0, stall 0 and 30) and C = 6
#                                  torus:2x3 (D = 5, stall 30); plain per-core
#                                  programs (dense) on C = 2 ring (the harness);
#                                  tpu-board-cmp names a changed element / dump byte; an error
#                                  halt and a deadlock (--max-cycles) name the busy cores;
#                                  send/recv/allreduce in a loop with index registers (C = 2
#                                  ring): traces, dumps and counters as the model's
#   test-board-flat   (make test)  the flat build (one verilated tpu_board, host through the
#                                  AXI4-Lite windows) against the assembled one, N = 4, C = 2
#                                  ring and C = 4 torus:2x2: traces and dumps byte-identical
# Full only (make test-full): the cases that need a core build of their own (~45 s each)
#   test-board-cosim-full          N = 8 C = 2 ring dptrain; N = 4 C = 2 ring with 256-bit AXI
#                                  data (dptrain, plain mlp); collall at N = 3 with W = 32 on
#                                  C = 6 torus:2x3 (D = 5, stall 30); as test-board-cosim
#   test-board-flat-full           the flat build against the assembled one with 256-bit AXI
#                                  data, N = 4 C = 2 ring (dptrain), as test-board-flat
# One verilated core per (N, W, B) shared by every board; the NoCs and flat boards are small.

TEST_SUITES += test-board-lint test-board-cosim test-board-flat
FULL_SUITES += test-board-cosim-full test-board-flat-full

.PHONY: test-board-lint test-board-cosim test-board-flat test-board-cosim-full \
        test-board-flat-full board-cosim-tools

test-board-lint: $(GEN)
	@VERILATOR=$(VERILATOR) sh tests/boardcosim/lint.sh $(GEN)

board-cosim-tools:
	@$(MAKE) --no-print-directory $(GEN) $(CMODEL_LIB) $(BOARD_CMP) $(TPU_BOARD_RUN) $(TPU_MKPROG)

test-board-cosim: board-cosim-tools
	@BUILD=$(BUILD) GEN=$(GEN) VERILATOR=$(VERILATOR) sh tests/boardcosim/cosim.sh test

test-board-cosim-full: board-cosim-tools
	@BUILD=$(BUILD) GEN=$(GEN) VERILATOR=$(VERILATOR) sh tests/boardcosim/cosim.sh full

test-board-flat: board-cosim-tools
	@BUILD=$(BUILD) GEN=$(GEN) VERILATOR=$(VERILATOR) sh tests/boardcosim/flat.sh test

test-board-flat-full: board-cosim-tools
	@BUILD=$(BUILD) GEN=$(GEN) VERILATOR=$(VERILATOR) sh tests/boardcosim/flat.sh full
