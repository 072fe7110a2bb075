# SPDX-License-Identifier: Apache-2.0
# The core's DMA, register block and memories as units (docs/isa.md "Host interface",
# "Memories"; sim/units/core_units.mk):
#   test-core-units  verilated tpu_core_dma (N = 1, 3, 36) against an AXI4 slave memory with
#                    random back-pressure and a reference of rows, host bytes, bursts and the
#                    ideal-slave timing; tpu_core_regs against random AXI4-Lite traffic;
#                    tpu_sram (read-first, registered read) at two shapes; lint (~60 s cold on
#                    an idle 2-core machine, a few s with ccache)
#   test-sram-bram   Yosys synth_xilinx maps tpu_sram to RAMB18E1/RAMB36E1 only (~12 s)
include sim/units/core_units.mk

TEST_SUITES += test-core-units test-sram-bram
