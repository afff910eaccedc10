#!/usr/bin/env bash
# Rebuild the real libMIOpen 2.17.0 (ROCm 5.2.3) with MIOpen's HIPNOGPU backend on Debian bookworm: the library
# the real-MIOpen tests load (tests/real_miopen.py, ../shared/real-miopen/README.md). About 25 minutes on 2
# cores; needs the network for the Debian packages, the MIOpen source and half.hpp (unless given locally).
#
#   scripts/build_real_miopen.sh [options]          (also: make real-miopen REAL_MIOPEN_ARGS="...")
#
#   --source URL|DIR   MIOpen's git URL, or a local checkout (default https://github.com/ROCm/MIOpen.git)
#   --ref REF          the tag or commit to build (default rocm-5.2.3)
#   --half URL|FILE    ROCmSoftwarePlatform/half's git URL, or a local half.hpp
#                      (default https://github.com/ROCmSoftwarePlatform/half.git)
#   --work DIR         where the source and the build go (default /tmp/mio: the shared library was built there,
#                      and the paths MIOpen embeds, e.g. in its assert messages, come from it)
#   --out DIR          where libMIOpen.so.1, include/miopen/ and LICENSE.txt go (default WORK/out)
#   --jobs N           parallel jobs (default: the number of cores)
#   --no-apt           do not install the Debian packages (they must be there already)
#   --pack             also write OUT/libMIOpen.so.1.xz and print the sha256 of the library
#
# Then: MIOGEN_REAL_MIOPEN=OUT make test   (or copy OUT over ../shared/real-miopen after --pack)
set -euo pipefail

SOURCE="https://github.com/ROCm/MIOpen.git"
REF="rocm-5.2.3"
HALF="https://github.com/ROCmSoftwarePlatform/half.git"
WORK="/tmp/mio"
OUT=""
JOBS="$(nproc 2>/dev/null || echo 2)"
APT=1
PACK=0

usage() { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "build_real_miopen: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
    case "$1" in
        --source) SOURCE="${2:?--source needs a value}"; shift 2 ;;
        --ref) REF="${2:?--ref needs a value}"; shift 2 ;;
        --half) HALF="${2:?--half needs a value}"; shift 2 ;;
        --work) WORK="${2:?--work needs a value}"; shift 2 ;;
        --out) OUT="${2:?--out needs a value}"; shift 2 ;;
        --jobs) JOBS="${2:?--jobs needs a value}"; shift 2 ;;
        --no-apt) APT=0; shift ;;
        --pack) PACK=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown option: $1" ;;
    esac
done
OUT="${OUT:-$WORK/out}"
SRC="$WORK/src"
BUILD="$WORK/build"
HALF_DIR="$WORK/half/include"

# --------------------------------------------------------------------------- Debian packages
PACKAGES=(hipcc clang-15 rocm-device-libs rocm-cmake libamdhip64-dev libboost-filesystem-dev libboost-system-dev
          libsqlite3-dev nlohmann-json3-dev libbz2-dev cmake make g++ git xz-utils)
if [ "$APT" = 1 ]; then
    SUDO=""
    if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null 2>&1 || die "installing packages needs root (or sudo); or use --no-apt"
        SUDO="sudo"
    fi
    echo "build_real_miopen: installing ${PACKAGES[*]}"
    $SUDO apt-get update
    $SUDO apt-get install -y --no-install-recommends "${PACKAGES[@]}"
fi
for tool in cmake make g++ git; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool is missing (install the Debian packages, or drop --no-apt)"
done
[ -x /usr/lib/llvm-15/bin/clang-offload-bundler ] || die "/usr/lib/llvm-15/bin/clang-offload-bundler is missing (clang-15)"

mkdir -p "$WORK"

# --------------------------------------------------------------------------- the source
rm -rf "$SRC"
if [ -d "$SOURCE" ]; then
    if git -C "$SOURCE" rev-parse --verify --quiet "$REF^{commit}" >/dev/null; then
        echo "build_real_miopen: exporting $REF from the checkout $SOURCE"
        mkdir -p "$SRC"
        git -C "$SOURCE" archive --format=tar "$REF" | tar -x -C "$SRC"
    else
        echo "build_real_miopen: $SOURCE has no $REF; copying the tree as it is"
        cp -a "$SOURCE" "$SRC"
    fi
else
    echo "build_real_miopen: cloning $SOURCE at $REF"
    git clone --depth 1 --branch "$REF" "$SOURCE" "$SRC"
fi
[ -f "$SRC/include/miopen/miopen.h" ] || die "$SRC does not look like MIOpen (no include/miopen/miopen.h)"

# --------------------------------------------------------------------------- half.hpp
rm -rf "$WORK/half"
mkdir -p "$HALF_DIR"
if [ -f "$HALF" ]; then
    cp "$HALF" "$HALF_DIR/half.hpp"
else
    git clone --depth 1 "$HALF" "$WORK/half-src"
    cp "$WORK/half-src/include/half.hpp" "$HALF_DIR/half.hpp"
    rm -rf "$WORK/half-src"
fi

# --------------------------------------------------------------------------- the two patches for g++
KERNEL_CPP="$SRC/src/hipoc/hipoc_kernel.cpp"
PROGRAM_CPP="$SRC/src/hipoc/hipoc_program.cpp"
grep -q '#include <hip/hip_ext.h>' "$KERNEL_CPP" || die "$KERNEL_CPP: no #include <hip/hip_ext.h> to patch"
if ! grep -q 'miogen: clang-only helper' "$KERNEL_CPP"; then
    # hip_ext.h names pArgs, which only clang's HIP headers declare
    sed -i '/#include <hip\/hip_ext.h>/i\
// miogen: clang-only helper that hip/hip_ext.h names, declared for g++\
#include <cstddef>\
#include <tuple>\
template <std::size_t N, typename... Ts> void pArgs(const std::tuple<Ts...>&, void*);' "$KERNEL_CPP"
fi
if ! grep -q 'miogen: default OpenCL compiler' "$PROGRAM_CPP"; then
    sed -i '1i\
// miogen: default OpenCL compiler (never found without a GPU toolchain)\
#ifndef HIP_OC_COMPILER\
#define HIP_OC_COMPILER "/usr/bin/clang-ocl"\
#endif' "$PROGRAM_CPP"
fi

# --------------------------------------------------------------------------- configure and build
export HIP_PLATFORM=amd
cmake -S "$SRC" -B "$BUILD" \
    -DMIOPEN_BACKEND=HIPNOGPU -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=g++ -DCMAKE_C_COMPILER=gcc \
    -DCMAKE_CXX_FLAGS="-D__HIP_PLATFORM_AMD__=1 -D__HIP_PLATFORM_HCC__=1 -I $HALF_DIR -w" -DCMAKE_CXX_FLAGS_RELEASE=-O1 \
    -DCMAKE_SHARED_LINKER_FLAGS="-Wl,--allow-multiple-definition -Wl,--no-as-needed -lamdhip64 -Wl,--as-needed" \
    -DMIOPEN_USE_MLIR=Off -DMIOPEN_USE_ROCBLAS=Off -DMIOPEN_USE_COMGR=Off -DMIOPEN_USE_HIPRTC=Off \
    -DMIOPEN_BUILD_DRIVER=Off -DBUILD_TESTING=Off -DBoost_USE_STATIC_LIBS=Off -DHALF_INCLUDE_DIR="$HALF_DIR" \
    -DMIOPEN_USE_MIOPENTENSILE=Off -DMIOPEN_USE_MIOPENGEMM=Off \
    -DMIOPEN_OFFLOADBUNDLER_BIN=/usr/lib/llvm-15/bin/clang-offload-bundler
make -C "$BUILD" -j"$JOBS" MIOpen

# --------------------------------------------------------------------------- install into OUT
LIB="$(find "$BUILD/lib" -maxdepth 1 -name 'libMIOpen.so.1.*' -type f | head -n 1)"
[ -n "$LIB" ] || die "the build left no $BUILD/lib/libMIOpen.so.1.*"
mkdir -p "$OUT/include/miopen"
cp "$LIB" "$OUT/libMIOpen.so.1"
cp "$SRC/include/miopen/miopen.h" "$OUT/include/miopen/"
for h in version.h config.h export.h; do
    cp "$BUILD/include/miopen/$h" "$OUT/include/miopen/"
done
[ -f "$SRC/LICENSE.txt" ] && cp "$SRC/LICENSE.txt" "$OUT/"
if [ "$PACK" = 1 ]; then
    xz -9 -T0 -c "$OUT/libMIOpen.so.1" > "$OUT/libMIOpen.so.1.xz"
fi
echo "build_real_miopen: $OUT/libMIOpen.so.1 (sha256 $(sha256sum "$OUT/libMIOpen.so.1" | cut -d' ' -f1))"
echo "build_real_miopen: run the tests on it with: MIOGEN_REAL_MIOPEN=$OUT make test"
