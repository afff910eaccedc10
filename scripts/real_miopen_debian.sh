#!/usr/bin/env bash
# The real Debian-built libMIOpen releases the tests load (tests/real_debian.py, docs/real-miopen.md): a Debian sid
# root (debootstrap) with libmiopen1 of sid (MIOpen 3.4.0) installed, the libmiopen1 of experimental (MIOpen 3.5.1)
# unpacked beside it with its HIP 7 dependencies, python3, the HIP header the stand-in GPU is compiled against, and
# the compilers MIOpen 3.4.0 builds its kernels with (docs/real-miopen.md: its clang, lld, device libraries).
# Trimmed (rocBLAS's Tensile kernels and the kernels embedded in librocblas, docs, apt's caches) and cached outside
# the repository, keyed by the package versions apt reports: a later run that finds the same versions reuses it.
#
#   scripts/real_miopen_debian.sh [options]          (also: make real-miopen-debian)
#
#   --cache DIR     where the roots are cached (default ${XDG_CACHE_HOME:-~/.cache}/miogen/real-miopen-debian)
#   --mirror URI    the Debian archive (default: the first Debian URI of this machine's apt configuration)
#   --rebuild       build a new root even when the cached one has the current versions
#   --offline       reuse the cached root without asking apt for the current versions
#
# Prints the root's directory (last line of stdout), its size and how long it took. Needs root (debootstrap, chroot).
set -euo pipefail

CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/miogen/real-miopen-debian"
MIRROR=""
REBUILD=0
OFFLINE=0

usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "real_miopen_debian: $*" >&2; exit 1; }
say() { echo "real_miopen_debian: $*" >&2; }

while [ $# -gt 0 ]; do
    case "$1" in
        --cache) CACHE="${2:?--cache needs a value}"; shift 2 ;;
        --mirror) MIRROR="${2:?--mirror needs a value}"; shift 2 ;;
        --rebuild) REBUILD=1; shift ;;
        --offline) OFFLINE=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown option: $1" ;;
    esac
done

START=$(date +%s)
[ "$(id -u)" = 0 ] || die "needs root (debootstrap and chroot)"
APT_OPTS=(-o Acquire::Check-Valid-Until=false -o Dpkg::Use-Pty=0 -q)
# the packages: libmiopen1 of sid and of experimental, by their Debian versions
SID_PKG=libmiopen1
EXP_PKG=libmiopen1
LIBDIR=usr/lib/x86_64-linux-gnu

in_root() { chroot "$1" env LC_ALL=C DEBIAN_FRONTEND=noninteractive "${@:2}"; }

# The versions apt offers now (after an update inside ROOT): "sid-version experimental-version".
candidates() {
    local root="$1" sid exp
    in_root "$root" apt-get "${APT_OPTS[@]}" update >/dev/null || return 1
    sid=$(in_root "$root" apt-cache policy "$SID_PKG" | awk '/Candidate:/ {print $2}')
    exp=$(in_root "$root" apt-cache madison "$EXP_PKG" | awk -F'|' '$3 ~ /experimental/ {gsub(/ /, "", $2); print $2; exit}')
    [ -n "$sid" ] && [ "$sid" != "(none)" ] && [ -n "$exp" ] || return 1
    echo "$sid $exp"
}

key_of() { echo "$1" | tr ' :~' '_..'; }

finish() {
    local root="$1" how="$2"
    say "$how in $(( $(date +%s) - START )) s; root $(du -sh "$root" | cut -f1)"
    echo "$root"
}

mkdir -p "$CACHE"
CURRENT="$CACHE/current"
# a root of an older set-up (without MIOpen's kernel compilers, marked by `compilers`) is rebuilt
if [ "$REBUILD" = 0 ] && [ -f "$CURRENT/complete" ] && [ ! -f "$CURRENT/compilers" ]; then
    say "the cached root predates the kernel compilers; rebuilding"
    REBUILD=1
fi
if [ "$REBUILD" = 0 ] && [ -f "$CURRENT/complete" ]; then
    if [ "$OFFLINE" = 1 ]; then
        finish "$CURRENT/root" "reused $(cat "$CURRENT/versions") (offline)"
        exit 0
    fi
    if now=$(candidates "$CURRENT/root"); then
        rm -rf "${CURRENT:?}/root/var/lib/apt/lists/"* "${CURRENT:?}/root/var/cache/apt/"*.bin
        if [ "$now" = "$(cat "$CURRENT/versions")" ]; then
            finish "$CURRENT/root" "reused ($now)"
            exit 0
        fi
        say "the packages changed: $(cat "$CURRENT/versions") -> $now; rebuilding"
    else
        say "warning: apt could not tell the current versions; reusing the cached root"
        finish "$CURRENT/root" "reused $(cat "$CURRENT/versions")"
        exit 0
    fi
fi

# --------------------------------------------------------------------------- a fresh root
command -v debootstrap >/dev/null 2>&1 || {
    apt-get install -y --no-install-recommends debootstrap >/dev/null 2>&1 \
        || { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends debootstrap >/dev/null; }
} || die "cannot install debootstrap"
command -v gcc >/dev/null 2>&1 || die "needs gcc (the tests compile the stand-in GPU with it)"
if [ -z "$MIRROR" ]; then
    # the Debian archive this machine's apt uses (not its security archive)
    MIRROR=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 2>/dev/null \
             | awk '$2 !~ /security/ && $1 ~ /\/debian\/?$/ {print $1; exit}')
    [ -n "$MIRROR" ] || die "no Debian archive in this machine's apt configuration: pass --mirror URI"
fi

NEW="$CACHE/building.$$"
rm -rf "$NEW"
mkdir -p "$NEW"
trap 'rm -rf "$NEW"' EXIT
ROOT="$NEW/root"
say "debootstrap sid"
debootstrap --variant=minbase sid "$ROOT" "$MIRROR" >"$NEW/debootstrap.log" 2>&1 \
    || { tail -20 "$NEW/debootstrap.log" >&2; die "debootstrap failed"; }
echo "deb ${MIRROR%/} experimental main" >"$ROOT/etc/apt/sources.list.d/experimental.list"
VERSIONS=$(candidates "$ROOT") || die "apt in the root does not offer $SID_PKG in sid and experimental"
read -r SID_V EXP_V <<<"$VERSIONS"
say "installing $SID_PKG $SID_V (sid) and the dependencies of $EXP_PKG $EXP_V (experimental)"
in_root "$ROOT" apt-get "${APT_OPTS[@]}" install -y --no-install-recommends "$SID_PKG=$SID_V" python3 >"$NEW/apt.log" 2>&1 \
    || { tail -20 "$NEW/apt.log" >&2; die "installing $SID_PKG failed"; }
# the experimental library's own dependencies (its other package of the same name cannot be installed beside it:
# it is unpacked into /opt below); its test data and the clang headers are for building kernels, not loading
mapfile -t EXP_DEPS < <(in_root "$ROOT" apt-cache show "$EXP_PKG=$EXP_V" | sed -n 's/^Depends: //p' | head -1 \
    | tr ',' '\n' | sed 's/^ *//; s/[ |].*//' | grep -v -e '^libmiopen' -e '^libclang-common' \
    | while read -r dep; do in_root "$ROOT" dpkg -s "$dep" >/dev/null 2>&1 || echo "$dep"; done)
in_root "$ROOT" apt-get "${APT_OPTS[@]}" install -y --no-install-recommends -t experimental "${EXP_DEPS[@]}" >>"$NEW/apt.log" 2>&1 \
    || { tail -20 "$NEW/apt.log" >&2; die "installing the dependencies of $EXP_PKG $EXP_V failed"; }
in_root "$ROOT" sh -c "cd /tmp && apt-get ${APT_OPTS[*]} download $EXP_PKG=$EXP_V libamdhip64-dev" >>"$NEW/apt.log" 2>&1 \
    || { tail -20 "$NEW/apt.log" >&2; die "downloading $EXP_PKG $EXP_V failed"; }
EXP_DIR="opt/$EXP_PKG-$EXP_V"
mkdir -p "$ROOT/$EXP_DIR" "$NEW/x"
dpkg-deb -x "$ROOT"/tmp/"${EXP_PKG}_${EXP_V#*:}"_*.deb "$NEW/x"
cp -a "$NEW/x/$LIBDIR"/libMIOpen.so* "$ROOT/$EXP_DIR/"
cp "$NEW/x/usr/share/doc/$EXP_PKG/copyright" "$ROOT/$EXP_DIR/copyright"
# the HIP runtime header (the stand-in GPU is compiled against it; the package's other files are not needed)
dpkg-deb -x "$ROOT"/tmp/libamdhip64-dev_*.deb "$NEW/hipdev"
mkdir -p "$ROOT/usr/include"
cp -a "$NEW/hipdev/usr/include/hip" "$ROOT/usr/include/"
# ... and its version file: clang's HIP driver finds the runtime by it (share/hip/version)
mkdir -p "$ROOT/usr/share/hip"
cp "$NEW/hipdev/usr/share/hip/version" "$ROOT/usr/share/hip/"
rm -rf "$NEW/x" "$NEW/hipdev" "$ROOT"/tmp/*.deb

# --------------------------------------------------------------------------- MIOpen's kernel compilers
# libMIOpen of sid builds its kernels by running clang: /usr/bin/clang++-N (HIP kernels) and clang-N at its build
# path (OpenCL-C kernels), both by absolute path, with ld.lld and the ROCm device libraries. The libMIOpen of
# experimental builds through libamd-comgr and libhiprtc (its own dependencies): nothing more.
SID_LIB="$ROOT/$LIBDIR/libMIOpen.so.1"
CLANGXX=$(strings "$SID_LIB" | grep -m1 -o '^/usr/bin/clang++-[0-9]*$' || true)
BUILD_CLANG=$(strings "$SID_LIB" | grep -m1 -o '^/build/[^ ]*/clang-[0-9]*$' || true)
if [ -n "$CLANGXX" ]; then
    N=${CLANGXX##*-}
    say "installing MIOpen's kernel compilers: clang-$N, lld-$N, llvm-$N, rocm-device-libs-$N"
    in_root "$ROOT" apt-get "${APT_OPTS[@]}" install -y --no-install-recommends "clang-$N" "lld-$N" "llvm-$N" \
        "clang-tools-$N" "rocm-device-libs-$N" >>"$NEW/apt.log" 2>&1 \
        || { tail -20 "$NEW/apt.log" >&2; die "installing clang-$N failed"; }
    ln -sfn "ld.lld-$N" "$ROOT/usr/bin/ld.lld"
    if [ -n "$BUILD_CLANG" ]; then
        mkdir -p "$ROOT$(dirname "$BUILD_CLANG")"
        ln -sfn "/usr/bin/clang-$N" "$ROOT$BUILD_CLANG"
    fi
    # libMIOpen passes `-isystem /usr/include` (twice) to its HIP kernel builds: /usr/include then comes before
    # libstdc++'s headers, whose `#include_next <math.h>` finds nothing. A wrapper drops those pairs.
    rm -f "$ROOT$CLANGXX"
    cat >"$ROOT$CLANGXX" <<WRAPPER
#!/bin/sh
# miogen (scripts/real_miopen_debian.sh): drops the \`-isystem /usr/include\` pairs libMIOpen passes (a system
# directory already; named again it hides libc's <math.h> from libstdc++'s #include_next), then runs clang++-$N.
skip=0
for a; do
    shift
    if [ "\$skip" = 1 ]; then
        skip=0
        [ "\$a" = /usr/include ] && continue
        set -- "\$@" -isystem "\$a"
        continue
    fi
    if [ "\$a" = -isystem ]; then skip=1; continue; fi
    set -- "\$@" "\$a"
done
exec /usr/lib/llvm-$N/bin/clang++ "\$@"
WRAPPER
    chmod 755 "$ROOT$CLANGXX"
    echo "$CLANGXX (wrapper) ${BUILD_CLANG:-} ld.lld" >"$NEW/compilers"
else
    echo "none: $SID_PKG names no clang++" >"$NEW/compilers"
fi

# --------------------------------------------------------------------------- trim
say "trimming"
in_root "$ROOT" apt-get clean
rm -rf "$ROOT"/var/lib/apt/lists/* "$ROOT"/usr/share/doc/* "$ROOT"/usr/share/man/* "$ROOT"/usr/share/locale/* \
       "$ROOT"/usr/share/info/* "$ROOT"/var/cache/debconf/*-old "$ROOT"/var/log/*.log
# rocBLAS's Tensile kernels (code objects for real GPUs; MIOpen needs them only to run GEMM solvers)
rm -rf "$ROOT/$LIBDIR"/rocblas/*/library
# the GPU code embedded in librocblas (its .hip_fatbin section, handed to __hipRegisterFatBinary, which the
# stand-in ignores): punched out of the file, which keeps its size and layout
for lib in "$ROOT/$LIBDIR"/librocblas.so.*.*; do
    [ -f "$lib" ] && [ ! -L "$lib" ] || continue
    read -r off size < <(readelf -SW "$lib" | awk '$2 == ".hip_fatbin" {print $5, $6}') || continue
    [ -n "${off:-}" ] && fallocate --punch-hole --offset "$((16#$off))" --length "$((16#$size))" "$lib"
done

# --------------------------------------------------------------------------- the manifest, then the cache
{
    echo "# Debian version, the library inside the root (tests/real_debian.py reads this)"
    echo "$SID_V /$LIBDIR/libMIOpen.so.1"
    echo "$EXP_V /$EXP_DIR/libMIOpen.so.1"
} >"$NEW/libraries"
echo "$VERSIONS" >"$NEW/versions"
touch "$NEW/complete"
DEST="$CACHE/$(key_of "$VERSIONS")"
rm -rf "$DEST"
mv "$NEW" "$DEST"
trap - EXIT
ln -sfn "$(basename "$DEST")" "$CURRENT"
# older roots go: the cache holds one
for old in "$CACHE"/*; do
    [ "$old" = "$DEST" ] || [ "$old" = "$CURRENT" ] || rm -rf "$old"
done
finish "$CURRENT/root" "built ($VERSIONS)"
