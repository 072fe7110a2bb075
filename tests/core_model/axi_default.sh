#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-core-model, part 5: the default width of the core's AXI4 data master (docs/isa.md
# "AXI4 master (data)") is defined once (tpu_cfg_axi_data_bits, tpu/config.h) and reaches gen (gen_axi_data_bits_default) and the C model
# (tpu_axi_data_bits_default, used by tpu-run and tpu-board-run): for N = 1, 3, 16, 17, 32,
# 100, 128 the width gen writes into tpu_params.h must be the one both runners report; and
# --axi-data-bits B reaches both runners.
# Usage: axi_default.sh GEN TPU-RUN TPU-BOARD-RUN WORKDIR
gen=$1; run=$2; brun=$3; out=$4
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $1"; fail=$((fail + 1)); }
rm -rf "$out"; mkdir -p "$out/job"
printf 'halt\n' >"$out/halt.s"
printf -- '--prog ../halt.s\n' >"$out/job/core0.args"  # relative to the args file
for n in 1 3 16 17 32 100 128; do
    "$gen" --mxu "$n" --cores 1 -o "$out/g$n" >/dev/null || { bad "gen --mxu $n"; continue; }
    g=$(sed -n 's/^#define TPU_CORE_AXI_DATA_BITS  *\([0-9]*\).*/\1/p' "$out/g$n/tpu_params.h")
    grep -q "^// core: .* axi_data_bits=$g\$" "$out/g$n/tpu_core.sv" || bad "N=$n: tpu_core.sv header is not axi_data_bits=$g"
    m=$("$run" --mxu "$n" --prog "$out/halt.s" | sed -n 's/^tpu-run: core: .*axi_data_bits=\([0-9]*\).*/\1/p')
    b=$("$brun" --mxu "$n" --cores 1 --job "$out/job" --out "$out/b$n" | sed -n 's/.*axi_data_bits=\([0-9]*\):.*/\1/p')
    if [ -n "$g" ] && [ "$g" = "$m" ] && [ "$g" = "$b" ]; then ok
    else bad "N=$n: gen's default $g, tpu-run's '$m', tpu-board-run's '$b'"; fi
    rm -rf "$out/g$n" "$out/b$n"
done
for bits in 64 128 256 512; do
    m=$("$run" --mxu 4 --axi-data-bits "$bits" --prog "$out/halt.s" | sed -n 's/^tpu-run: core: .*axi_data_bits=\([0-9]*\).*/\1/p')
    b=$("$brun" --mxu 4 --cores 1 --axi-data-bits "$bits" --job "$out/job" --out "$out/bb" | sed -n 's/.*axi_data_bits=\([0-9]*\):.*/\1/p')
    [ "$m" = "$bits" ] && [ "$b" = "$bits" ] && ok || bad "--axi-data-bits $bits: tpu-run '$m', tpu-board-run '$b'"
done
for bits in 32 100 1024 x; do
    "$run" --mxu 4 --axi-data-bits "$bits" --prog "$out/halt.s" >"$out/log" 2>&1; st=$?
    [ $st -eq 2 ] && grep -qF "tpu-run: error: --axi-data-bits '$bits' is not an AXI data width (allowed: 64, 128, 256, 512)" "$out/log" \
        && ok || bad "tpu-run --axi-data-bits $bits: exit $st: $(cat "$out/log")"
    "$brun" --mxu 4 --cores 1 --axi-data-bits "$bits" --job "$out/job" --out "$out/bb" >"$out/log" 2>&1; st=$?
    [ $st -eq 2 ] && grep -qF "tpu-board-run: error: --axi-data-bits '$bits' is not an AXI data width (allowed: 64, 128, 256, 512)" "$out/log" \
        && ok || bad "tpu-board-run --axi-data-bits $bits: exit $st: $(cat "$out/log")"
done
echo "axi_default: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
