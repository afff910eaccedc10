#!/bin/bash
# The numeric suite of the real MIOpen 2.17.0 OpenCL kernels on the device machine's NVIDIA GPU, through NVIDIA's
# OpenCL driver, plus the speed figures: run ON the device machine, from the repository root, with device_carry/ocl
# carried (tests/gpu/ocl_carry.sh fills it here: the xz'd library, Debian's boost 1.74 filesystem library, the
# cp312 wheels of pyopencl and its dependencies; the device has no registry). Prints one table; writes
# $OUT/nvidia.json (results and speed) and $OUT/log.
#   device tool: run(command="bash tests/gpu/ocl_nvidia.sh", carry=["device_carry/ocl"])
# With --pytest it runs the gpu tier instead (pytest -m gpu tests/gpu: the same checks against the committed
# results), required to find the GPU (MIOGEN_REQUIRE_GPU=1).
set -euo pipefail
CARRY=${OCL_CARRY:-device_carry/ocl}
W=${OCL_WORK:-/tmp/miogen-ocl}
OUT=${OUT:-$W/out}
mkdir -p "$W/icd" "$W/lib" "$W/py" "$OUT"
xz -dc "$CARRY/libMIOpen.so.1.xz" > "$W/lib/libMIOpen.so.1"
cp "$CARRY"/libboost_filesystem.so.1.74.0 "$W/lib/"
# NVIDIA's OpenCL is installed but not in the ICD list (which names PoCL only): an ICD folder of its own
NV=$(ldconfig -p | awk '/libnvidia-opencl\.so\.1/ {print $NF}' | head -1 || true)
[ -n "$NV" ] || NV=$(find /usr/local/nvidia /usr/lib /usr/lib64 /lib /opt -name 'libnvidia-opencl.so.1' 2>/dev/null | head -1 || true)
[ -n "$NV" ] || { echo "no libnvidia-opencl.so.1 on this machine" >&2; exit 2; }
echo "$NV" > "$W/icd/nvidia.icd"
python3 -m pip install -q --no-index --no-deps --target "$W/py" "$CARRY"/wheels/*.whl
# the runtime package as the wheel lays it out (runtime/ = miopen, generated/ = miopen._generated)
rm -rf "$W/py/miopen" && cp -r runtime "$W/py/miopen" && cp -r generated "$W/py/miopen/_generated"
export OCL_ICD_VENDORS="$W/icd" LD_LIBRARY_PATH="$W/lib:${LD_LIBRARY_PATH:-}" PYTHONPATH="$W/py"
export MIOGEN_OCL_PLATFORM=nvidia PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
python3 -c 'import pyopencl as cl; [print(p.name, "|", d.name, "|", d.version, "| fp16:", "cl_khr_fp16" in d.extensions) for p in cl.get_platforms() for d in p.get_devices()]'
if [ "${1:-}" = --pytest ]; then
    ln -sfn "$PWD/codegen" "$W/py/miogen"  # the suite's conftest imports the generator
    MIOGEN_REAL_MIOPEN_OCL="$W/lib/libMIOpen.so.1" MIOGEN_REQUIRE_GPU=1 OCL_FIND_TIMEOUT="${OCL_FIND_TIMEOUT:-75}" \
        python3 -m pytest -p no:cacheprovider -m gpu tests/gpu 2>&1 | tee "$OUT/log"
    exit "${PIPESTATUS[0]}"
fi
python3 -m tests.gpu.ocl_suite --lib "$W/lib/libMIOpen.so.1" --name nvidia --out "$OUT" --cache "$W/cache" \
    --find-timeout "${OCL_FIND_TIMEOUT:-75}" --bench --probe-find 2>&1 | tee "$OUT/log"
