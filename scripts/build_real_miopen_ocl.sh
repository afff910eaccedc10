#!/usr/bin/env bash
# Rebuild a real libMIOpen with MIOpen's OpenCL backend: the libraries the numeric tests run on PoCL
# (tests/real/kernels/test_real_miopen_ocl*.py). Runs the recipe of ../shared (build.sh: Debian packages, the source
# without the AMD-GPU databases, its patches, cmake, make; as root) with the project's own patches for that release
# (scripts/real-miopen-ocl-patches/<release>/*.diff) applied after the recipe's. 2.17.0: 18-28 min, 3.3.0: 26-40 min
# on 2 quiet cores (3.3.0: well over an hour at nice 15 beside other work; src/kernel.cpp alone takes 30 min there).
#
#   scripts/build_real_miopen_ocl.sh [options]      (also: make real-miopen-ocl REAL_MIOPEN_OCL_ARGS="...")
#
#   --release R    2.17.0 (default; recipe ../shared/real-miopen-ocl) or 3.3.0 (../shared/real-miopen-ocl-330)
#   --source DIR   a git directory of ROCm/MIOpen (bare is fine); required. 2.17.0: holding tag rocm-5.2.3;
#                  3.3.0: whose HEAD is 3.3.0 (rocm_setup_version(VERSION 3.3.0))
#   --half DIR     a git directory of ROCm/half (ROCmSoftwarePlatform/half); required
#   --recipe DIR   the folder with build.sh and patches/ (default: the release's folder of ../shared)
#   --work DIR     where the patches, the source and the build go (default /tmp/mio-ocl-<release>)
#   --jobs N       parallel jobs (default: the number of cores)
#   --skip-apt     leave out the Debian packages step (3.3.0's build.sh only; 2.17.0's always runs it)
#   --pack         also write WORK/out/libMIOpen.so.1.xz (3.3.0's build.sh always does)
#
# Then: MIOGEN_REAL_MIOPEN_OCL=WORK/out make test (2.17.0), MIOGEN_REAL_MIOPEN_OCL_330=WORK/out (3.3.0); or copy the .xz
# over the recipe's folder after --pack, with the sha256 printed here in tests/real_miopen.py.
set -euo pipefail

HERE="$(cd "$(dirname "$0")/.." && pwd)"
RELEASE="2.17.0"
RECIPE=""
SOURCE=""
HALF=""
WORK=""
JOBS="$(nproc 2>/dev/null || echo 2)"
PACK=0
SKIP_APT=0

usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "build_real_miopen_ocl: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
    case "$1" in
        --release) RELEASE="${2:?--release needs a value}"; shift 2 ;;
        --source) SOURCE="${2:?--source needs a value}"; shift 2 ;;
        --half) HALF="${2:?--half needs a value}"; shift 2 ;;
        --recipe) RECIPE="${2:?--recipe needs a value}"; shift 2 ;;
        --work) WORK="${2:?--work needs a value}"; shift 2 ;;
        --jobs) JOBS="${2:?--jobs needs a value}"; shift 2 ;;
        --skip-apt) SKIP_APT=1; shift ;;
        --pack) PACK=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown option: $1" ;;
    esac
done
case "$RELEASE" in
    2.17.0) FOLDER="real-miopen-ocl" ;;
    3.3.0) FOLDER="real-miopen-ocl-330" ;;
    *) die "--release must be 2.17.0 or 3.3.0; got '$RELEASE'" ;;
esac
WORK="${WORK:-/tmp/mio-ocl-$RELEASE}"
if [ -z "$RECIPE" ]; then
    for d in "$HERE/../shared/$FOLDER" "$HERE/../../shared/$FOLDER"; do
        [ -f "$d/build.sh" ] && { RECIPE="$d"; break; }
    done
fi
[ -n "$RECIPE" ] && [ -f "$RECIPE/build.sh" ] \
    || die "no recipe for $RELEASE: pass --recipe DIR (a folder with build.sh and patches/, as ../shared/$FOLDER)"
[ -n "$SOURCE" ] || die "--source must be a git directory of ROCm/MIOpen"
GITDIR="$(git -C "$SOURCE" rev-parse --absolute-git-dir 2>/dev/null || echo "$SOURCE")"
if [ "$RELEASE" = 2.17.0 ]; then
    git --git-dir="$GITDIR" rev-parse --verify --quiet "rocm-5.2.3^{commit}" >/dev/null 2>&1 \
        || die "--source must be a git directory of ROCm/MIOpen holding tag rocm-5.2.3; got '$SOURCE'"
else
    git --git-dir="$GITDIR" show HEAD:CMakeLists.txt 2>/dev/null | grep -q 'rocm_setup_version(VERSION 3.3.0)' \
        || die "--source must be a git directory of ROCm/MIOpen whose HEAD is 3.3.0; got '$SOURCE'"
fi
HALFDIR="$(git -C "$HALF" rev-parse --absolute-git-dir 2>/dev/null || echo "$HALF")"
git --git-dir="$HALFDIR" cat-file -e HEAD:include/half.hpp 2>/dev/null \
    || die "--half must be a git directory of ROCm/half (include/half.hpp at HEAD); got '$HALF'"
[ "$SKIP_APT" = 1 ] && [ "$RELEASE" = 3.3.0 ] || [ "$(id -u)" = 0 ] \
    || die "the recipe installs Debian packages: run it as root (or --skip-apt for 3.3.0 once they are installed)"

# the recipe's patches, then ours (their names sort after the recipe's; a name in both is an error)
PATCHES="$WORK/patches"
rm -rf "$PATCHES" && mkdir -p "$PATCHES"
cp "$RECIPE"/patches/*.diff "$PATCHES/"
OURS="$HERE/scripts/real-miopen-ocl-patches/$RELEASE"
for p in "$OURS"/*.diff; do
    [ -f "$p" ] || continue
    [ -e "$PATCHES/$(basename "$p")" ] && die "$p has the name of one of the recipe's patches"
    cp "$p" "$PATCHES/"
done
echo "build_real_miopen_ocl: MIOpen $RELEASE from $RECIPE, patches: $(cd "$PATCHES" && echo *.diff)"

rm -f "$WORK/out/libMIOpen.so.1.xz"
W="$WORK" MIOPEN_GIT="$GITDIR" HALF_GIT="$HALFDIR" JOBS="$JOBS" PATCHES="$PATCHES" SKIP_APT="$SKIP_APT" \
    bash "$RECIPE/build.sh"
if [ "$PACK" = 1 ] && [ ! -f "$WORK/out/libMIOpen.so.1.xz" ]; then
    xz -6 -T0 -c "$WORK/out/libMIOpen.so.1" > "$WORK/out/libMIOpen.so.1.xz"
fi
VAR="MIOGEN_REAL_MIOPEN_OCL"
[ "$RELEASE" = 3.3.0 ] && VAR="MIOGEN_REAL_MIOPEN_OCL_330"
echo "build_real_miopen_ocl: $WORK/out/libMIOpen.so.1 (sha256 $(sha256sum "$WORK/out/libMIOpen.so.1" | cut -d' ' -f1))"
echo "build_real_miopen_ocl: run the tests on it with: $VAR=$WORK/out make test"
