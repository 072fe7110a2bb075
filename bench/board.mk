# SPDX-License-Identifier: Apache-2.0
# Board benchmarks (docs/board.md; figures in bench/RESULTS.md "Board"). Neither is part of
# make test.
# make bench-board-allreduce: one allreduce instruction, S = 1 KiB .. 1 MiB of fp32, on the
#   assembled SystemC board (sim/board_build.sh asm; C = 8, torus 2x4, W = 64, D = 2, the
#   N = BENCH_BOARD_N core with a BENCH_BOARD_ACC_KIB KiB ACC) vs the board model
#   (tpu-board-run) and the ring bound (bench/board_allreduce.sh; SIZES="1024 4096" in the
#   environment runs fewer sizes). Both run a copy of
#   sim/board_build.sh (a shell reads its script as it runs: an edit mid-build breaks it).
# make bench-board-128: build the gen --mxu 128 --cores 8 board from nothing (time, peak
#   memory) and run a 128x128x128 matmul on all 8 cores vs the model (bench/board_128.sh).
#   Heavy (~12 GB): run it alone. BENCH_BOARD_128_N=16 runs the same script small. Its cores
#   have BENCH_BOARD_128_IMEM instructions of IMEM (default 4096), so that
# make bench-train-rtl: one CNN training step on that board's build (bench/train.sh rtl;
#   TRAIN_RTL_N and TRAIN_RTL_IMEM follow BENCH_BOARD_128_N and _IMEM) reuses it as it is.
BENCH_BOARD_N       ?= 16
BENCH_BOARD_128_IMEM ?= 4096
BENCH_BOARD_ACC_KIB ?= 1024
BENCH_BOARD_128_N   ?= 128
BENCH_BOARD_OBJCACHE ?=
TPU_BOARD_RUN       ?= $(BUILD)/tools/tpu-board-run

.PHONY: bench-board-allreduce bench-board-128
bench-board-allreduce: deps
	@$(MAKE) --no-print-directory -s $(GEN) $(CMODEL_LIB) $(TPU_BOARD_RUN) $(SIM_DIR)/tpu-board-cmp \
		$(UNITS_DIR)/noc-ring8/tb
	@mkdir -p $(BENCH_DIR) && cp sim/board_build.sh $(BENCH_DIR)/board_build.sh && \
	tb=$$(BOARD_CORE_ARGS="--acc-kib $(BENCH_BOARD_ACC_KIB)" GEN=$(GEN) CMODEL_LIB=$(CMODEL_LIB) \
		sh $(BENCH_DIR)/board_build.sh asm $(BENCH_BOARD_N) 8 torus:2x4 64 2) && \
	BOARD_TB=$$tb TPU_BOARD_RUN=$(TPU_BOARD_RUN) N=$(BENCH_BOARD_N) ACC_KIB=$(BENCH_BOARD_ACC_KIB) \
		NOC_TB=$(UNITS_DIR)/noc-ring8/tb BOARD_CMP=$(SIM_DIR)/tpu-board-cmp sh bench/board_allreduce.sh $(BENCH_DIR)/board_allreduce

bench-board-128: deps
	@$(MAKE) --no-print-directory -s $(GEN) $(CMODEL_LIB) $(TPU_BOARD_RUN) $(TPU_MKPROG) $(SIM_DIR)/tpu-board-cmp
	@BOARD_CMP=$(SIM_DIR)/tpu-board-cmp GEN=$(GEN) CMODEL_LIB=$(CMODEL_LIB) TPU_MKPROG=$(TPU_MKPROG) TPU_BOARD_RUN=$(TPU_BOARD_RUN) \
		IMEM=$(BENCH_BOARD_128_IMEM) OBJCACHE=$(BENCH_BOARD_OBJCACHE) sh bench/board_128.sh $(BENCH_BOARD_128_N) $(BENCH_DIR)/board_$(BENCH_BOARD_128_N)

.PHONY: bench-train-rtl
bench-train-rtl: deps
	@$(MAKE) --no-print-directory -s $(GEN) $(CMODEL_LIB) $(TOOLS_DIR)/tpu-train
	@TRAIN_RTL_N=$(BENCH_BOARD_128_N) TRAIN_RTL_IMEM=$(BENCH_BOARD_128_IMEM) sh bench/train.sh rtl
