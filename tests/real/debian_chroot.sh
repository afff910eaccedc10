#!/bin/sh
# Run a command inside the Debian root (tests/real_debian.py), so that the compilers libMIOpen 3.4.0 starts by
# their absolute paths (/usr/bin/clang++-21, its build path's clang-21) are the root's:
#   debian_chroot.sh ROOT STANDIN REPO COMMAND...
# In a mount namespace of its own: an overlay over ROOT (the cached root is never written), with this machine's
# /proc, /dev, /tmp (the workers' folders), REPO, and ROOT itself at their own paths inside. Needs root
# (mount namespaces, overlayfs); the namespace and its mounts end with the command.
set -eu
[ $# -ge 4 ] || { echo "usage: debian_chroot.sh ROOT STANDIN REPO COMMAND..." >&2; exit 2; }
case "${1:-}" in --in-namespace) shift; inside=1 ;; *) inside=0 ;; esac
if [ "$inside" = 0 ]; then
    exec unshare --mount --propagation private -- "$0" --in-namespace "$@"
fi
root=$1 standin=$2 repo=$3
shift 3
work=$(mktemp -d "${TMPDIR:-/tmp}/miogen-chroot.XXXXXX")
mkdir -p "$work/upper" "$work/work" "$work/merged"
mount -t overlay overlay -o "lowerdir=$root,upperdir=$work/upper,workdir=$work/work" "$work/merged"
m=$work/merged
mount -t proc proc "$m/proc"
mount --rbind /dev "$m/dev"
for dir in /tmp "$repo" "$root" "$standin"; do
    mkdir -p "$m$dir"
    mount --bind "$dir" "$m$dir"
done
status=0
chroot "$m" env PATH=/usr/bin:/bin LD_LIBRARY_PATH="$standin" "$@" || status=$?
# the binds first: only then is the folder free of this machine's directories
umount -R "$m" && rm -rf "$work" || true
exit $status
