#!/bin/bash
# The numeric suite of the real MIOpen 2.17.0 OpenCL kernels on the device machine's NVIDIA GPU, through NVIDIA's
# OpenCL driver, plus the speed figures: run ON the device machine, from the repository root, with device_carry/ocl
# carried (tests/gpu/ocl_carry.sh fills it here: the xz'd library, Debian's boost 1.74 filesystem library, the
# cp312 wheels of pyopencl and its dependencies, the MIOpenGEMM and 3.3.0 builds; the device has no registry). Prints
# the tables; writes $OUT/nvidia.json (results, RNN/GEMM/Find 2.0 rows, speed) and $OUT/log, and $OUT/nvidia330.json
# (the numeric suite on 3.3.0) and $OUT/log330.
#   device tool: run(command="bash tests/gpu/ocl_nvidia.sh", carry=["device_carry/ocl"])
#   OCL_RUNS="217" or "330": only the 2.17.0 run (with the GEMM and Find 2.0 extras) or only the 3.3.0 suite
# With --pytest it runs the gpu tier instead (pytest -m gpu tests/gpu: the same checks against the committed
# results), required to find the GPU (MIOGEN_REQUIRE_GPU=1). With --module M [ARGS] it runs python3 -m M ARGS in
# this set-up instead (a probe of one op, e.g. tests/gpu/bn_bwd_probe.py), the libraries named as for --pytest.
# With --bench-only NAME it runs the speed figures alone into $OUT/NAME.json. OCL_RUNTIME_FROM=DIR takes the runtime
# from DIR/runtime and DIR/generated instead of this checkout's (e.g. an older tree, to compare on one machine).
set -euo pipefail
CARRY=${OCL_CARRY:-device_carry/ocl}
W=${OCL_WORK:-/tmp/miogen-ocl}
OUT=${OUT:-$W/out}
mkdir -p "$W/icd" "$W/lib" "$W/py" "$OUT"
xz -dc "$CARRY/libMIOpen.so.1.xz" > "$W/lib/libMIOpen.so.1"
# the MIOpenGEMM build (RNN, GEMM convolutions) and 3.3.0's OpenCL build (Find 2.0), each in a folder of its own
# (libMIOpen finds libmiopengemm beside it through $ORIGIN)
EXTRA=()
for sub in gemm v330; do
    [ -f "$CARRY/$sub/libMIOpen.so.1.xz" ] || continue
    mkdir -p "$W/$sub"
    for f in "$CARRY/$sub"/*.xz; do xz -dc "$f" > "$W/$sub/$(basename "$f" .xz)"; done
    EXTRA+=("--$sub-lib" "$W/$sub/libMIOpen.so.1")
done
cp "$CARRY"/libboost_filesystem.so.1.74.0 "$W/lib/"
# NVIDIA's OpenCL is installed but not in the ICD list (which names PoCL only): an ICD folder of its own
NV=$(ldconfig -p | awk '/libnvidia-opencl\.so\.1/ {print $NF}' | head -1 || true)
[ -n "$NV" ] || NV=$(find /usr/local/nvidia /usr/lib /usr/lib64 /lib /opt -name 'libnvidia-opencl.so.1' 2>/dev/null | head -1 || true)
[ -n "$NV" ] || { echo "no libnvidia-opencl.so.1 on this machine" >&2; exit 2; }
echo "$NV" > "$W/icd/nvidia.icd"
python3 -m pip install -q --no-index --no-deps --target "$W/py" "$CARRY"/wheels/*.whl
# the runtime package as the wheel lays it out (runtime/ = miopen, generated/ = miopen._generated)
SRC=${OCL_RUNTIME_FROM:-.}
rm -rf "$W/py/miopen" && cp -r "$SRC/runtime" "$W/py/miopen" && cp -r "$SRC/generated" "$W/py/miopen/_generated"
export OCL_ICD_VENDORS="$W/icd" LD_LIBRARY_PATH="$W/lib:${LD_LIBRARY_PATH:-}" PYTHONPATH="$W/py"
export MIOGEN_OCL_PLATFORM=nvidia PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
python3 -c 'import pyopencl as cl; [print(p.name, "|", d.name, "|", d.version, "| fp16:", "cl_khr_fp16" in d.extensions) for p in cl.get_platforms() for d in p.get_devices()]'
if [ "${1:-}" = --pytest ]; then
    ln -sfn "$PWD/codegen" "$W/py/miogen"  # the suite's conftest imports the generator
    [ -f "$W/gemm/libMIOpen.so.1" ] && export MIOGEN_REAL_MIOPEN_OCL_GEMM="$W/gemm/libMIOpen.so.1"
    [ -f "$W/v330/libMIOpen.so.1" ] && export MIOGEN_REAL_MIOPEN_OCL_330="$W/v330/libMIOpen.so.1"
    MIOGEN_REAL_MIOPEN_OCL="$W/lib/libMIOpen.so.1" MIOGEN_REQUIRE_GPU=1 OCL_FIND_TIMEOUT="${OCL_FIND_TIMEOUT:-75}" \
        python3 -m pytest -p no:cacheprovider -m gpu tests/gpu 2>&1 | tee "$OUT/log"
    exit "${PIPESTATUS[0]}"
fi
if [ "${1:-}" = --module ]; then
    shift
    [ -f "$W/v330/libMIOpen.so.1" ] && export MIOGEN_REAL_MIOPEN_OCL_330="$W/v330/libMIOpen.so.1"
    MIOGEN_REAL_MIOPEN_OCL="$W/lib/libMIOpen.so.1" python3 -m "$@" 2>&1 | tee "$OUT/log"
    exit "${PIPESTATUS[0]}"
fi
if [ "${1:-}" = --bench-only ]; then
    GEMM=()
    [ -f "$W/gemm/libMIOpen.so.1" ] && GEMM=(--gemm-lib "$W/gemm/libMIOpen.so.1")
    python3 -m tests.gpu.ocl_suite --lib "$W/lib/libMIOpen.so.1" --name "${2:?--bench-only NAME}" --out "$OUT" \
        --cache "$W/cache" --bench-only "${GEMM[@]}" 2>&1 | tee "$OUT/${2}.log"
    exit "${PIPESTATUS[0]}"
fi
# OCL_RUNS picks the runs (default both; one per device call if both do not fit its time limit)
RUNS=${OCL_RUNS:-"217 330"}
if [[ " $RUNS " == *" 217 "* ]]; then
python3 -m tests.gpu.ocl_suite --lib "$W/lib/libMIOpen.so.1" --name nvidia --out "$OUT" --cache "$W/cache" \
    --find-timeout "${OCL_FIND_TIMEOUT:-75}" --bench --probe-find "${EXTRA[@]}" 2>&1 | tee "$OUT/log"
fi
# the numeric suite again on 3.3.0 (where it differs from 2.17.0: tests/real/ocl330/differences.py)
if [[ " $RUNS " == *" 330 "* ]] && [ -f "$W/v330/libMIOpen.so.1" ]; then
    python3 -m tests.gpu.ocl_suite --lib "$W/v330/libMIOpen.so.1" --env MIOPEN_DEBUG_ENABLE_DEPRECATED_SOLVERS=1 \
        --name nvidia330 --out "$OUT" --cache "$W/cache330" --find-timeout "${OCL_FIND_TIMEOUT:-75}" 2>&1 \
        | tee "$OUT/log330"
fi
