#!/usr/bin/env bash
# The runtime suite against a stub library of every committed release but one (`make test` runs the
# whole suite against that one): two releases at a time, each pytest in its own temp dir; a failing
# release prints its log. Usage: scripts/test_releases.sh PYTHON SKIP_RELEASE
set -euo pipefail
py=$1
skip=$2
cd "$(dirname "$0")/.."
suite="tests/runtime/test_runtime_core.py tests/runtime/test_ops_basic.py tests/runtime/test_ops_conv.py tests/runtime/test_ops_rnn.py tests/runtime/test_caffe2.py
       tests/runtime/test_runtime_checks.py tests/runtime/test_library_switch.py"
work=$(mktemp -d "${TMPDIR:-/tmp}/miogen-releases.XXXXXX")
trap 'rm -rf "$work"' EXIT
# the committed releases as miogen reads them (miogen.spec.releases: the one version grammar), oldest first
committed=$("$py" -c 'import pathlib, miogen.spec.releases as r; print(*r.Releases.of(pathlib.Path("specs/miopen")).versions)')
releases=$(printf '%s\n' $committed | grep -vxF "$skip" || true)
# the stub libraries compiled once for every run (scripts/test_all.sh shares its cache with the whole suite)
export MIOGEN_TEST_CACHE="${MIOGEN_TEST_CACHE:-$work/cache}"
mkdir -p "$MIOGEN_TEST_CACHE"
export py suite work
# shellcheck disable=SC2016  # expanded by the inner shell
printf '%s\n' $releases | xargs -P 2 -I{} sh -c '
    if MIOGEN_TEST_RELEASE={} "$py" -m pytest -p no:cacheprovider -p no:warnings --basetemp="$work/{}" $suite \
        > "$work/{}.log" 2>&1; then
        echo "runtime suite against the MIOpen {} stub: $(tail -n 1 "$work/{}.log")"
    else
        cat "$work/{}.log"; echo "runtime suite against the MIOpen {} stub FAILED"; exit 255
    fi'
