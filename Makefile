# SPDX-License-Identifier: Apache-2.0
# Top-level Makefile. Every job is one target; the rules for each folder live in that
# folder's .mk fragment, included below. `make help` lists the targets.

# ---- The default configuration (what rtl/ holds and what `make run` co-simulates) ----
MXU   ?= 16
CORES ?= 8

# ---- Where everything built goes (never inside the source folders) ----
BUILD := build

# ---- C toolchain: C11, warnings as errors, no FP contraction anywhere in the model ----
CC       ?= gcc
CXX      ?= g++
CSTD     := -std=c11
WARN     := -Wall -Wextra -Werror
OPT      := -O2 -g
CFLAGS_COMMON := $(CSTD) $(WARN) $(OPT) -ffp-contract=off -D_POSIX_C_SOURCE=200809L

# ---- Verilator: ccache when present makes rebuilds of the same model cheap ----
VERILATOR ?= verilator
OBJCACHE  ?= $(shell command -v ccache 2>/dev/null)
export OBJCACHE

.DEFAULT_GOAL := all
.PHONY: all help deps rtl check-rtl test test-full bench run clean

all: rtl

help:
	@echo "make run        generate, build and co-simulate the default MXU ($(MXU)x$(MXU)); prints PASS/FAIL"
	@echo "make core-run   generate, build and co-simulate the default core ($(MXU)x$(MXU)) on the mlp program against the model; PASS/FAIL"
	@echo "make board-run  co-simulate the default board (C = 8 cores $(MXU)x$(MXU), torus 2x4, SystemC) on the dptrain job against the board model; PASS/FAIL"
	@echo "make board-tb BOARD=\"N C T W D\" [BOARD_MODE=asm|flat]  build the board co-simulation harness of one board (sim/board_build.sh)"
	@echo "make test       all tests that run in CI (well under 30 min on 2 cores)"
	@echo "make test-full  exhaustive numerics and large configurations (~1.5 h)"
	@echo "make cosim-128  co-simulate the 128x128 MXU (~11 GB, ~15 min build)"
	@echo "make synth-est  Yosys resource estimates, JSON and a table"
	@echo "make bench      benchmarks; figures go to bench/RESULTS.md by hand"
	@echo "make bench-host one 224x224 ResNet-50 image on the C model (one thread) against PyTorch fp32 and ONNX Runtime (one thread): ms and ratios"
	@echo "make bench-noc-allreduce  ring all-reduce on the board interconnect RTL (C = 8) vs the model and the ring bound (docs/board.md)"
	@echo "make bench-core MXU utilisation of the core on matmul phases (M >= 8N, K, N' >= 4N): RTL N = 16 vs model, model N = 128"
	@echo "make bench-board-allreduce  one allreduce (1 KiB .. 1 MiB) on the RTL board (C = 8, torus 2x4 and ring) vs the board model and the ring bound"
	@echo "make bench-board-128  build the gen --mxu 128 --cores 8 board co-simulation (time, peak memory), a matmul on 8 cores (heavy: run alone)"
	@echo "make tools      build/tools: tpu-as, tpu-dis, tpu-mkprog (core programs), tpu-run (the core model; docs/isa.md),"
	@echo "                tpu-board-run (the board model: C cores and the collectives; docs/board.md)"
	@echo "make rtl        regenerate rtl/ (gen --mxu $(MXU) --cores $(CORES) -o rtl)"
	@echo "make check-rtl  fail if rtl/ differs from what gen produces"
	@echo "make deps       install missing Debian packages"
	@echo "make fuzz       fuzz every parser (libFuzzer, ASan+UBSan), FUZZ_SECONDS per target, one at a time"
	@echo "make fuzz-onnx  fuzz the ONNX reader and the compiler's passes (FUZZ_SECONDS)"
	@echo "make regress [SEEDS=N]  random programs at N = 2, 4, 8 on the model and the RTL, X-init, AXI stall and latency seeds, random-board jobs (GNU parallel, resumable): build/regress/summary.txt, junit.xml"
	@echo "make regress-slurm      the same job list as a Slurm array script (build/regress/regress.sbatch); make regress-report when it is done"
	@echo "make test-conformance-full  ONNX node tests of the claimed operators, N = 8 and 16 (docs/conformance.md)"
	@echo "make train-same-text [TEXT_BASE=REV]  training programs' text over 245 model x configuration pairs, diffed against REV's build (refactors that must not change a training step)"
	@echo "make train-same-bits [BITS_BASE=REV]  tpu-train runs of this tree and REV's over tests/train/same_bits.sh's matrix: weights and gradients compared byte for byte"

deps:
	@sh scripts/deps.sh

clean:
	rm -rf $(BUILD)

include gen/gen.mk
include cmodel/cmodel.mk
include compiler/compiler.mk
include tools/tools.mk
include sim/sim.mk
include tests/tests.mk
include bench/bench.mk
