#!/usr/bin/env bash
# make test's test steps, side by side so that every core is busy until the end: mypy (make typecheck), the
# whole suite (pytest, one xdist worker per core) and the runtime suite against every other release
# (scripts/test_releases.sh). One scratch folder for the run: the compiled stub libraries every pytest
# process shares (MIOGEN_TEST_CACHE) and the bytecode of the checkout (PYTHONPYCACHEPREFIX; the checkout
# itself gets no __pycache__). mypy's and the releases' output follows the suite's; the exit status is
# non-zero if a step failed. An interrupt (SIGINT, SIGTERM, SIGHUP) stops all three.
# Usage: scripts/test_all.sh PYTHON RELEASE (the release the whole suite runs against)
set -uo pipefail
py=$1
release=$2
cd "$(dirname "$0")/.."
work=$(mktemp -d "${TMPDIR:-/tmp}/miogen-test.XXXXXX")
export MIOGEN_TEST_CACHE="$work/cache" PYTHONPYCACHEPREFIX="$work/pycache" PYTHONDONTWRITEBYTECODE=
mkdir -p "$MIOGEN_TEST_CACHE"

# each step a process group of its own (job control), so that an interrupt reaches all of its processes
pids=()
stop() {
    trap '' INT TERM HUP
    for pid in "${pids[@]}"; do kill -"$1" -- -"$pid" 2>/dev/null; done
    wait
    rm -rf "$work"
    exit 130
}
trap 'stop INT' INT
trap 'stop TERM' TERM HUP
trap 'rm -rf "$work"' EXIT
# each phase says when it starts and how long it took (the three below run side by side)
start=$SECONDS
files=$(find tests -name "test_*.py" | wc -l)
others=$(ls specs/miopen/ | sed -n 's/^\([0-9]*\.[0-9]*\.[0-9]*\)\.yaml$/\1/p' | grep -cvxF "$release" || true)
echo "== phase: typecheck (mypy --strict; its output follows the suite's)"
echo "== phase: runtime suite per release ($others other releases, two at a time; its output follows the suite's)"
echo "== phase: pytest ($files files against the MIOpen $release stub, one worker per core; the browser tests: make docs-test)"
set -m
make --no-print-directory typecheck > "$work/typecheck.log" 2>&1 &
typecheck=$!
pids+=("$typecheck")
bash scripts/test_releases.sh "$py" "$release" > "$work/releases.log" 2>&1 &
releases=$!
pids+=("$releases")
MIOGEN_TEST_RELEASE="$release" "$py" -m pytest -n auto --dist worksteal -m "not gpu and not browser" tests &  # every tier but gpu and the browser tests (tests/tiers.py)
suite=$!
pids+=("$suite")
set +m

status=0
wait "$suite" || status=1
echo "== phase: pytest done ($((SECONDS - start)) s)"
if wait "$typecheck"; then cat "$work/typecheck.log"; else cat "$work/typecheck.log"; echo "make typecheck FAILED"; status=1; fi
echo "== phase: typecheck done ($((SECONDS - start)) s)"
wait "$releases" || status=1
cat "$work/releases.log"
echo "== phase: runtime suite per release done ($((SECONDS - start)) s)"
exit "$status"
