"""The numeric coverage table: op × dtype × path -> checked / refused by MIOpen / not buildable here / a wrong
result MIOpen gives (with the reason), from the claims of the checks (`common.numeric`)."""

from __future__ import annotations

from . import (checks_conv, checks_fusion, checks_half, checks_layers, checks_misc,  # noqa: F401 - claims
               checks_runtime, checks_tensor)
from .common import CLAIMS, Row

MODULES = (checks_tensor, checks_layers, checks_conv, checks_half, checks_misc, checks_fusion, checks_runtime)


def rows() -> dict[Row, tuple[str, str, str]]:
    """row -> (outcome, reason, check)."""
    out = {}
    for check, claims in CLAIMS.items():
        for row, (outcome, reason) in claims.items():
            assert row not in out, f"{row} claimed twice"
            out[row] = (outcome, reason, check)
    return out


def _cell(text: str) -> str:
    """Text for a markdown table cell (a bare | would end the cell)."""
    return text.replace("|", "\\|")


def markdown() -> str:
    """The table: each row's 2.17.0 outcome and reason, and 3.3.0's (../shared's library) where it differs
    (tests/real/ocl330)."""
    from ..ocl330.differences import DIFFERENCES, UNPATCHED

    table = rows()
    lines = ["| op | dtype | path | result (2.17.0) | reason | 3.3.0 | check |", "|---|---|---|---|---|---|---|"]
    for (op, dt, path), (outcome, reason, check) in table.items():
        other = DIFFERENCES.get((op, dt, path)) or UNPATCHED.get((op, dt, path))
        v330 = "same" if other is None else f"**{other[0]}**: {_cell(other[1])}"
        lines.append(f"| {op} | {dt} | {path} | {outcome} | {_cell(reason)} | {v330} | `{check}` |")
    counts: dict[str, int] = {}
    for outcome, _, _ in table.values():
        counts[outcome] = counts.get(outcome, 0) + 1
    summary = ", ".join(f"{n} {k}" for k, n in counts.items())
    return f"{len(table)} rows: {summary}.\n\n" + "\n".join(lines) + "\n"
