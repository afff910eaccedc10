"""docs/coverage.md: every function of MIOpen 2.17.0 and 3.3.0 × how far the tests take it — the stub library, the
real library's host side, real kernels on PoCL, real kernels on a GPU — with the status each reached.

- stub: every wrapper of every committed release is called through the stub library (tests/runtime/test_releases.py,
  call-through both ways);
- real host side: 2.17.0's HIPNOGPU build (tests/real/coverage.py: checked against independent expectations, or a
  kernel function called for its status);
- PoCL / GPU: the functions each numeric check called, with the statuses they returned, as recorded by
  tests/gpu/ocl_suite.py in docs/ocl-results/<backend>.json (2.17.0 checks: the plain OpenCL build and the
  MIOpenGEMM build; 3.3.0: `<backend>330.json` and the Find 2.0 checks). A function is "checked" where it
  succeeded in a check that proved a row against numpy; else the outcome of the rows of the checks it succeeded
  in (a wrong result, a refusal); else "not buildable here" (status 7, with the check's reason) or "refused by
  MIOpen (status N)"; "not called" where no check of that column calls it. (A function that succeeded only in
  checks that proved nothing right, a destructor run by the collector during a check of unbuildable rows for
  instance, reads "succeeded; its checks prove no result".)

`MIOGEN_UPDATE_GOLDEN=1` with tests/runtime/test_real_miopen_coverage.py rewrites the page; that test fails when it is stale.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "coverage.md"
RESULTS = REPO / "docs" / "ocl-results"
RELEASES = ("2.17.0", "3.3.0")
#: (column title, results file name per release); a missing file leaves its column "—"
KERNEL_COLUMNS = (("real kernels, PoCL (CPU)", {"2.17.0": "pocl", "3.3.0": "pocl330"}),
                  ("real kernels, GPU (NVIDIA OpenCL)", {"2.17.0": "nvidia", "3.3.0": "nvidia330"}))
#: checks of a 2.17.0 run that belong to 3.3.0 (the run's --v330-lib checks)
V330_PREFIX = "ocl330."
CHECKED, NOT_CALLED = "checked", "not called"


def spec_functions(release: str) -> list[str]:
    from miogen.spec.spec_io import load

    return [f.name for f in load(REPO / "specs" / "miopen" / f"{release}.yaml").functions]


def _load(name: str) -> dict[str, Any] | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def _checks(release: str, name: str) -> list[tuple[dict[str, Any], str]] | None:
    """(results, check) for every check of `release` in the column's files; None without any function record.
    2.17.0: the checks of `<name>.json` but its 3.3.0 ones; 3.3.0: all of `<name>330.json` and the 3.3.0 checks
    of `<name>.json` (a 2.17.0 run carries the Find 2.0 checks of --v330-lib)."""
    base = _load(name.removesuffix("330"))
    own = _load(name) if release == "3.3.0" else None
    picked = []
    for run, mine in ((base, lambda c: c.startswith(V330_PREFIX) == (release == "3.3.0")), (own, lambda c: True)):
        if run is None:
            continue
        picked += [(run, check) for check in run.get("functions", {}) if mine(check)]
    return picked or None


def kernel_statuses(release: str, name: str) -> dict[str, str] | None:
    """function -> its status in the column `name` of `release` (None: no results recorded)."""
    checks = _checks(release, name)
    if checks is None:
        return None
    seen: dict[str, list[tuple[list[int], list[tuple[str, str]]]]] = {}
    for run, check in checks:
        rows = [(r[3], r[4]) for r in run["rows"] if r[5] == check]
        for fn, codes in run["functions"][check].items():
            seen.setdefault(fn, []).append((codes, rows))
    return {fn: _status(uses) for fn, uses in seen.items()}


def _status(uses: list[tuple[list[int], list[tuple[str, str]]]]) -> str:
    ok = [rows for codes, rows in uses if 0 in codes]
    if any(outcome == CHECKED for rows in ok for outcome, _ in rows):
        return CHECKED
    if ok:
        if any(outcome == "wrong result" for rows in ok for outcome, _ in rows):
            return "wrong result (an upstream bug its check pins)"
        return "succeeded; its checks prove no result"
    codes = sorted({c for cs, _ in uses for c in cs})
    if 7 in codes:
        why = next((reason for _, rows in uses for outcome, reason in rows
                    if outcome == "not buildable here" and reason), "")
        return "not buildable here (status 7)" + (f": {why}" if why else "")
    return f"refused by MIOpen (status {', '.join(map(str, codes))})"


def wrong_rows(release: str) -> list[tuple[str, str, str, str]]:
    """(column, op, path, reason) of every row with a wrong result in the column files of `release`."""
    out = []
    for title, files in KERNEL_COLUMNS:
        checks = _checks(release, files[release]) or []
        seen = set()
        for run, check in checks:
            for op, dt, path, outcome, reason, c in run["rows"]:
                if c == check and outcome == "wrong result" and (op, path) not in seen:
                    seen.add((op, path))
                    out.append((title, f"{op} ({dt})", path, reason))
    return out


def host_side(release: str) -> dict[str, str] | None:
    """2.17.0's HIPNOGPU coverage (tests/real/coverage.py); None for a release without a host-only build."""
    if release != "2.17.0":
        return None
    from . import coverage

    return {fn: (CHECKED if how.startswith("checked") else "needs a GPU: called for its status")
            for fn, how in coverage.table().items()}


def _cell(text: str, n: int = 110) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= n else text[:n - 1] + "…"


def page() -> str:
    out = ["# Coverage of MIOpen's functions", "",
           "<!-- generated by tests/real/coverage_page.py (MIOGEN_UPDATE_GOLDEN=1 with "
           "tests/runtime/test_real_miopen_coverage.py): do not edit -->", "",
           "Every function of MIOpen 2.17.0 and 3.3.0 against each way the tests reach it. **stub**: called through "
           "the stub library with every committed release's bindings (tests/runtime/test_releases.py). **real host side**: "
           "2.17.0's HIPNOGPU build, no kernels (docs/real-miopen.md). **real kernels**: the numeric checks on MIOpen's "
           "OpenCL builds (tests/real/ocl, tests/real/gemm, tests/real/ocl330) as tests/gpu/ocl_suite.py recorded "
           "them in docs/ocl-results: on PoCL here, on an NVIDIA GPU on the device machine. A kernel cell is "
           "*checked* where the function succeeded in a check whose results matched float64 numpy; otherwise the "
           "outcome of its checks (*wrong result*: an upstream bug the check pins; *refused by MIOpen*; *not "
           "buildable here* with the reason), or *not called*. — marks a column without results.", ""]
    for release in RELEASES:
        fns = spec_functions(release)
        host = host_side(release)
        kernels = [(title, kernel_statuses(release, files[release])) for title, files in KERNEL_COLUMNS]
        heads = ["stub", "real host side"] + [t for t, _ in kernels]
        counts = []
        for title, col in [("real host side", host), *kernels]:
            if col is None:
                counts.append(f"{title}: no results")
                continue
            n = sum(1 for fn in fns if col.get(fn, NOT_CALLED) == CHECKED)
            counts.append(f"{title}: {n} checked")
        out += [f"## MIOpen {release} ({len(fns)} functions)", "",
                f"stub: {len(fns)} called through; " + "; ".join(counts) + ".", "",
                "| function | " + " | ".join(heads) + " |", "|---|" + "---|" * len(heads)]
        for fn in fns:
            cells = [CHECKED, "—" if host is None else host.get(fn, NOT_CALLED)]
            cells += ["—" if col is None else col.get(fn, NOT_CALLED) for _, col in kernels]
            out.append(f"| `{fn}` | " + " | ".join(_cell(c) for c in cells) + " |")
        out += ["", f"Wrong results the checks pin on {release} (a function can be right in one row and wrong in "
                "another, so these are listed by row):", ""]
        wrong = wrong_rows(release)
        out += [f"- {title}: {_cell(op)}, {path}: {_cell(reason, 200)}" for title, op, path, reason in wrong] or ["- none"]
        out.append("")
    return "\n".join(out)
