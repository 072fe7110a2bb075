#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages the project needs, if any are missing.
# apt-get as root, sudo otherwise; a clear message and exit 1 if neither is possible.
set -eu

# Why each package is here: README.md, "Dependencies".
PKGS="build-essential pkg-config ccache verilator libsystemc-dev libcmocka-dev libmpfr-dev
libgmp-dev libopenblas-dev yosys iverilog nextpnr-ice40 fpga-icestorm python3 python3-yaml python3-numpy
zlib1g-dev time protobuf-c-compiler libprotobuf-c-dev libonnx-dev libonnx-testdata
python3-torch python3-torchvision python3-onnx dataset-fashion-mnist clang python3-matplotlib
parallel slurm-wlm munge"

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
# ONNX Runtime (npm onnxruntime-node) runs under node >= 16: Debian's nodejs and npm when the
# machine has no node of its own (a newer one installed another way is kept).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    missing="$missing nodejs npm"
fi
[ -z "$missing" ] && exit 0

echo "deps: installing missing Debian packages:$missing"
if [ "$(id -u)" = 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo -n"
elif command -v sudo >/dev/null 2>&1 && [ -t 0 ]; then
    SUDO="sudo"
else
    echo "deps: error: missing packages:$missing; run as root or with sudo: apt-get install$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
