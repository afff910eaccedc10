#!/usr/bin/env bash
# Rebuild the real libMIOpen 2.17.0 (ROCm 5.2.3) with MIOpen's OpenCL backend: the library the numeric tests
# run on PoCL (tests/real/kernels/test_real_miopen_ocl.py, ../shared/real-miopen-ocl/README.md). Runs that folder's recipe
# (build.sh: Debian packages, the source without the AMD-GPU databases, its six patches, cmake, make; 18-28 min on
# 2 cores, as root).
#
#   scripts/build_real_miopen_ocl.sh [options]      (also: make real-miopen-ocl REAL_MIOPEN_OCL_ARGS="...")
#
#   --source DIR   a git directory of ROCm/MIOpen holding tag rocm-5.2.3 (bare is fine); required
#   --half DIR     a git directory of ROCmSoftwarePlatform/half; required
#   --recipe DIR   the folder with build.sh and patches/ (default: ../shared/real-miopen-ocl beside the checkout)
#   --work DIR     where the source and the build go (default /tmp/mio-ocl)
#   --jobs N       parallel jobs (default: the number of cores)
#   --pack         also write WORK/out/libMIOpen.so.1.xz and print the sha256 of the library
#
# Then: MIOGEN_REAL_MIOPEN_OCL=WORK/out make test   (or copy the .xz over ../shared/real-miopen-ocl after --pack)
set -euo pipefail

HERE="$(cd "$(dirname "$0")/.." && pwd)"
RECIPE=""
SOURCE=""
HALF=""
WORK="/tmp/mio-ocl"
JOBS="$(nproc 2>/dev/null || echo 2)"
PACK=0

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "build_real_miopen_ocl: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
    case "$1" in
        --source) SOURCE="${2:?--source needs a value}"; shift 2 ;;
        --half) HALF="${2:?--half needs a value}"; shift 2 ;;
        --recipe) RECIPE="${2:?--recipe needs a value}"; shift 2 ;;
        --work) WORK="${2:?--work needs a value}"; shift 2 ;;
        --jobs) JOBS="${2:?--jobs needs a value}"; shift 2 ;;
        --pack) PACK=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown option: $1" ;;
    esac
done
if [ -z "$RECIPE" ]; then
    for d in "$HERE/../shared/real-miopen-ocl" "$HERE/../../shared/real-miopen-ocl"; do
        [ -f "$d/build.sh" ] && { RECIPE="$d"; break; }
    done
fi
[ -n "$RECIPE" ] && [ -f "$RECIPE/build.sh" ] || die "no recipe: pass --recipe DIR (a folder with build.sh and patches/)"
[ -n "$SOURCE" ] && git --git-dir="$SOURCE" rev-parse --verify --quiet "rocm-5.2.3^{commit}" >/dev/null 2>&1 \
    || git -C "$SOURCE" rev-parse --verify --quiet "rocm-5.2.3^{commit}" >/dev/null 2>&1 \
    || die "--source must be a git directory of ROCm/MIOpen holding tag rocm-5.2.3; got '${SOURCE}'"
[ -n "$HALF" ] || die "--half must be a git directory of ROCmSoftwarePlatform/half"
[ "$(id -u)" = 0 ] || die "the recipe installs Debian packages: run it as root"

GITDIR="$(git -C "$SOURCE" rev-parse --absolute-git-dir 2>/dev/null || echo "$SOURCE")"
HALFDIR="$(git -C "$HALF" rev-parse --absolute-git-dir 2>/dev/null || echo "$HALF")"
W="$WORK" MIOPEN_GIT="$GITDIR" HALF_GIT="$HALFDIR" JOBS="$JOBS" PATCHES="$RECIPE/patches" bash "$RECIPE/build.sh"
if [ "$PACK" = 1 ]; then
    xz -6 -T0 -c "$WORK/out/libMIOpen.so.1" > "$WORK/out/libMIOpen.so.1.xz"
fi
echo "build_real_miopen_ocl: $WORK/out/libMIOpen.so.1 (sha256 $(sha256sum "$WORK/out/libMIOpen.so.1" | cut -d' ' -f1))"
echo "build_real_miopen_ocl: run the tests on it with: MIOGEN_REAL_MIOPEN_OCL=$WORK/out make test"
