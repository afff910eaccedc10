#!/bin/bash
# Fill device_carry/ocl (git-ignored) with what tests/gpu/ocl_nvidia.sh needs on the device machine, which has no
# package registry: the xz'd OpenCL libMIOpen 2.17.0, its MIOpenGEMM build (gemm/: RNN, GEMM convolutions) and
# MIOpen 3.3.0's OpenCL build (v330/: Find 2.0) where ../shared has them, Debian's libboost_filesystem.so.1.74.0
# (the device has Ubuntu's 1.83), and the cp312 wheels of pyopencl and its dependencies (the versions of this venv).
set -euo pipefail
cd "$(dirname "$0")/../.."
SHARED=${REAL_MIOPEN_OCL:-../shared/real-miopen-ocl}
[ -f "$SHARED/libMIOpen.so.1.xz" ] || SHARED=/work/shared/real-miopen-ocl
D=device_carry/ocl
mkdir -p "$D/wheels"
cp "$SHARED/libMIOpen.so.1.xz" "$D/"
for build in gemm:real-miopen-ocl-gemm v330:real-miopen-ocl-330; do
    sub=${build%%:*} src="$(dirname "$SHARED")/${build#*:}"
    [ -f "$src/libMIOpen.so.1.xz" ] || continue
    mkdir -p "$D/$sub" && cp "$src"/*.so.1.xz "$D/$sub/"
done
cp /usr/lib/x86_64-linux-gnu/libboost_filesystem.so.1.74.0 "$D/"
PY=${PYTHON:-.venv/bin/python}
pins=$("$PY" -m pip list --format=freeze 2>/dev/null | grep -iE '^(pyopencl|pytools|platformdirs|siphash24|typing_extensions|pytest|pluggy|iniconfig|packaging|pygments|jinja2|markupsafe)==')
"$PY" -m pip download -q --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 --no-deps -d "$D/wheels" $pins
du -sh "$D"
