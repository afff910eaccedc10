"""docs/coverage.md, the page of every MIOpen 2.17.0 and 3.3.0 function × stub / real host side / real kernels on PoCL
/ real kernels on a GPU (tests/real/coverage_page.py), is current: rendered from the specs, tests/real/coverage.py and
the committed results of tests/gpu/ocl_suite.py (docs/ocl-results). `MIOGEN_UPDATE_GOLDEN=1` rewrites it. No real
library is loaded: the kernel columns come from the recorded runs."""

from __future__ import annotations

import json
import os

from ..real import coverage_page


def test_coverage_page_is_current() -> None:
    want = coverage_page.page()
    if os.environ.get("MIOGEN_UPDATE_GOLDEN") == "1":
        coverage_page.PAGE.write_text(want)
    assert coverage_page.PAGE.read_text() == want, (
        "docs/coverage.md is stale: MIOGEN_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/runtime/test_real_miopen_coverage.py")


def test_every_function_of_both_releases_has_a_row_per_column() -> None:
    """One row per spec function in each release's table, one cell per column, no function of the spec missing."""
    text = coverage_page.PAGE.read_text()
    for release in coverage_page.RELEASES:
        section = text.split(f"## MIOpen {release} ", 1)[1].split("\n## ", 1)[0]
        rows = [line for line in section.splitlines() if line.startswith("| `")]
        assert [r.split("`")[1] for r in rows] == coverage_page.spec_functions(release)
        assert all(r.count(" | ") == 4 for r in rows), release


def test_a_kernel_cell_says_checked_only_where_a_check_proved_a_row() -> None:
    """The status rule on a recorded run: success in a check with a checked row -> checked; success only beside a
    wrong row -> wrong result; status 7 alone -> not buildable here with the check's reason; another status ->
    refused with it."""
    st = coverage_page._status
    assert st([([0], [("checked", "")]), ([0, 7], [("not buildable here", "x")])]) == "checked"
    assert st([([0], [("wrong result", "upstream bug")])]) == "wrong result (an upstream bug its check pins)"
    assert st([([0], [("not buildable here", "no fp16")])]) == "succeeded; its checks prove no result"
    assert st([([7], [("not buildable here", "no fp16")])]) == "not buildable here (status 7): no fp16"
    assert st([([6], [("refused by MIOpen", "")])]) == "refused by MIOpen (status 6)"


def test_the_pocl_results_record_the_functions_of_every_check() -> None:
    """The committed PoCL runs carry each check's C functions and their statuses (what the kernel columns read)."""
    for name in ("pocl", "pocl330"):
        run = json.loads((coverage_page.RESULTS / f"{name}.json").read_text())
        checks = {r[5] for r in run["rows"]}
        assert checks <= set(run["functions"]), (name, checks - set(run["functions"]))
