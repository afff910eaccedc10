"""No file of the tree enumerates the committed releases: each derives them from specs/ (the spec files, and
`specs/miopen/releases.yaml` for what each is proven against), so `make upgrade` adds a release without a hand edit.

An enumeration is a literal holding both the oldest and the newest committed release: a Python list, tuple, set or
dict (its keys), a line of text, or a Markdown table whose rows start with releases. Generated files
(generated/, docs/api-changes.md) and specs/ itself are where the releases are written; they are not walked."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

from miogen.spec.releases import Releases

from ..helpers import REPO, SPECS

RELEASES = {str(v) for v in Releases.of(SPECS).versions}
OLDEST, NEWEST = (str(v) for v in (Releases.of(SPECS).versions[0], Releases.of(SPECS).versions[-1]))
#: what the walk leaves out: where releases are written (or rendered) from specs/
NOT_WALKED = ("specs/", "generated/", "docs/api-changes.md", "tests/golden/")
#: measurements taken on some releases (not a claim to list them all), with why
MEASUREMENTS = {
    "docs/audit.md": "results of `make audit` on the source trees it names",
}
_VERSION = re.compile(r"(?<![\w.])(\d+\.\d+\.\d+)(?![\w.])")
_ROW = re.compile(r"^\|\s*`?(\d+\.\d+\.\d+)`?\s*\|")


def _enumerates(found: set[str]) -> bool:
    return OLDEST != NEWEST and {OLDEST, NEWEST} <= found


def python_lists(text: str) -> list[tuple[int, list[str]]]:
    """(line, releases) of each container literal in Python source that enumerates the releases."""
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Dict):
            items: list[ast.expr | None] = list(node.keys)
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = list(node.elts)
        else:
            continue
        found = {e.value for e in items if isinstance(e, ast.Constant) and isinstance(e.value, str)} & RELEASES
        if _enumerates(found):
            out.append((node.lineno, sorted(found)))
    return out


def text_lists(text: str) -> list[tuple[int, list[str]]]:
    """(line, releases) of each line, and of each Markdown table (its first line), that enumerates the releases."""
    out = []
    table: set[str] = set()
    start = 0
    for number, line in enumerate([*text.splitlines(), ""], 1):
        found = set(_VERSION.findall(line)) & RELEASES
        if _enumerates(found):
            out.append((number, sorted(found)))
        row = _ROW.match(line)
        if line.startswith("|"):
            start = start or number
            table |= {row.group(1)} & RELEASES if row else set()
            continue
        if _enumerates(table):
            out.append((start, sorted(table)))
        table, start = set(), 0
    return out


def _tracked() -> list[str]:
    r = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("not a git checkout")
    return sorted(set(r.stdout.splitlines()))


def test_no_file_enumerates_the_committed_releases() -> None:
    hits = []
    for name in _tracked():
        path = REPO / name
        if name.startswith(NOT_WALKED) or name in MEASUREMENTS or not path.is_file():
            continue
        if path.suffix == ".py":
            found = python_lists(path.read_text(encoding="utf-8"))
        elif path.suffix in (".md", ".sh", ".txt", ".toml", ".yaml", ".yml", ".cfg") or path.name == "Makefile" \
                or name.startswith(".ci/"):
            found = text_lists(path.read_text(encoding="utf-8", errors="replace"))
        else:
            continue
        hits += [f"{name}:{line}: {', '.join(releases)}" for line, releases in found]
    assert not hits, ("these enumerate the committed releases; derive them from specs/ (the spec files, or "
                      "specs/miopen/releases.yaml) instead:\n" + "\n".join(hits))


def test_the_walk_finds_each_kind_of_list() -> None:
    """The detectors themselves: each kind of enumeration is found, a partial list is not."""
    every = sorted(RELEASES)
    assert python_lists(f"X = {every!r}\n") == [(1, every)]
    assert python_lists("D = {\n" + "".join(f"    {v!r}: 1,\n" for v in every) + "}\n") == [(1, every)]
    assert python_lists(f"T = ({OLDEST!r}, {NEWEST!r})\n") == [(1, sorted({OLDEST, NEWEST}))]
    assert python_lists(f"X = [{NEWEST!r}]\n") == []
    assert text_lists("releases: " + ", ".join(every) + "\n") == [(1, every)]
    table = "| MIOpen | x |\n|---|---|\n" + "".join(f"| {v} | 1 |\n" for v in every) + "\nafter\n"
    assert text_lists(table) == [(1, every)]
    assert text_lists(f"| {NEWEST} | 1 |\n") == []


def test_the_measurement_files_exist() -> None:
    assert all((REPO / name).is_file() for name in MEASUREMENTS)
