#!/usr/bin/env bash
# make test's test steps, side by side so that every core is busy until the end: mypy (make typecheck), the
# whole suite (pytest, one xdist worker per core) and the runtime suite against every other release
# (scripts/test_releases.sh). One scratch folder for the run: the compiled stub libraries every pytest
# process shares (MIOGEN_TEST_CACHE) and the bytecode of the checkout (PYTHONPYCACHEPREFIX; the checkout
# itself gets no __pycache__). A step that fails prints its log; the exit status is non-zero if one did.
# Usage: scripts/test_all.sh PYTHON RELEASE (the release the whole suite runs against)
set -uo pipefail
py=$1
release=$2
cd "$(dirname "$0")/.."
work=$(mktemp -d "${TMPDIR:-/tmp}/miogen-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
export MIOGEN_TEST_CACHE="$work/cache" PYTHONPYCACHEPREFIX="$work/pycache" PYTHONDONTWRITEBYTECODE=
mkdir -p "$MIOGEN_TEST_CACHE"

make --no-print-directory typecheck > "$work/typecheck.log" 2>&1 &
typecheck=$!
bash scripts/test_releases.sh "$py" "$release" > "$work/releases.log" 2>&1 &
releases=$!
MIOGEN_TEST_RELEASE="$release" "$py" -m pytest -n auto --dist worksteal tests
suite=$?

status=0
wait "$typecheck" || status=1
cat "$work/typecheck.log"
[ "$status" = 0 ] || echo "make typecheck FAILED"
if ! wait "$releases"; then status=1; fi
cat "$work/releases.log"
[ "$suite" = 0 ] || status=1
exit "$status"
