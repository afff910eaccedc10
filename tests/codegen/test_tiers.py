"""The test tiers (tests/tiers.py): every test file lies in a tier folder, each folder's conftest gives its tests
that tier, and `pytest -m <tier>` selects exactly them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ..helpers import REPO
from ..tiers import FOLDERS, TESTS, TIERS, mark_folder


def _where_to(text: str) -> str:
    """The tier folder a stray test file most likely belongs in, from what it imports."""
    if re.search(r"from \.+(real\.)?(ocl|gemm|ocl330)\b", text):
        return "real/kernels"
    if re.search(r"from \.+(real\.)?client\b|from \.+ import real_debian|HIPNOGPU|MIOGEN_HEADERS", text):
        return "real/library"
    if re.search(r"^\s*(import miopen|from miopen\b)|\bruntime_libs\b|\blibs: Libs\b", text, re.M):
        return "runtime"
    return "codegen"


def test_every_test_file_is_in_a_tier_folder() -> None:
    strays = []
    for path in sorted(TESTS.rglob("test_*.py")):
        rel = path.relative_to(TESTS)
        if rel.parent.as_posix() in FOLDERS:
            continue
        to = _where_to(path.read_text(encoding="utf-8"))
        strays.append(f"  python scripts/move_test.py tests/{rel.as_posix()} {to}   (tier {FOLDERS[to]}: git mv, then its "
                      f"imports of tests/'s shared modules, e.g. `from {'.' * (len(to.split('/')) + 1)}helpers import ...`)")
    assert not strays, ("test files outside a tier folder (tests/tiers.py FOLDERS: "
                        + ", ".join(f"tests/{f} = {t}" for f, t in FOLDERS.items()) + "); move each:\n"
                        + "\n".join(strays))


def test_each_tier_folder_has_its_conftest_and_each_tier_is_registered() -> None:
    assert set(FOLDERS.values()) == set(TIERS)
    for folder in FOLDERS:
        conftest = TESTS / folder / "conftest.py"
        assert (TESTS / folder / "__init__.py").is_file(), folder
        assert conftest.is_file() and "mark_folder(items, __file__)" in conftest.read_text(), conftest
    markers = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    assert set(TIERS) <= {m.partition(":")[0] for m in markers}


@dataclass
class _Item:
    """What mark_folder reads of a pytest item."""

    path: Path
    nodeid: str
    marks: list[str] = field(default_factory=list)

    def iter_markers(self) -> list[pytest.Mark]:
        return [getattr(pytest.mark, m).mark for m in self.marks]

    def add_marker(self, name: str) -> None:
        self.marks.append(name)


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize("own", [None, *TIERS])
def test_a_folder_gives_its_tier_and_takes_only_a_higher_one(folder: str, own: str | None) -> None:
    tier = FOLDERS[folder]
    inside = _Item(TESTS / folder / "test_x.py", f"tests/{folder}/test_x.py::t", [own] if own else [])
    outside = _Item(TESTS / "test_stray.py", "tests/test_stray.py::t")
    items: list[pytest.Item] = [inside, outside]  # type: ignore[list-item]
    if own is not None and TIERS.index(own) < TIERS.index(tier):
        with pytest.raises(pytest.UsageError, match=re.escape(inside.nodeid) + f".*marked {own}.*tier {tier}"):
            mark_folder(items, str(TESTS / folder / "conftest.py"))
        return
    mark_folder(items, str(TESTS / folder / "conftest.py"))
    assert inside.marks == [own or tier] and outside.marks == []


#: one small file of each folder with tests, and the tests in them that carry a higher tier than their folder's
_SAMPLE = ("tests/codegen/test_digest.py", "tests/runtime/test_main.py", "tests/real/library/test_next_release.py",
           "tests/real/kernels/test_real_miopen_ocl330.py", "tests/gpu/test_ocl_gpu.py")
_RAISED = {"tests/runtime/test_main.py::test_with_the_real_miopen_2_17_0": "real_library"}
_SELECT = """
import json, sys
import pytest

class Selected:
    def __init__(self): self.ids = []
    def pytest_collection_finish(self, session): self.ids = [item.nodeid for item in session.items]

out = {}
for expr in sys.argv[2:]:
    plugin = Selected()
    code = pytest.main(["--collect-only", "-qq", "-p", "no:cacheprovider", "-m", expr, *json.loads(sys.argv[1])],
                       plugins=[plugin])
    out[expr] = [int(code), plugin.ids]
print("SELECTED " + json.dumps(out))
"""


def test_pytest_m_selects_each_tier() -> None:
    """`pytest --collect-only -m <tier>` on a sample of every folder selects the sample's tests of that tier: those
    of its folders, and the tests marked with it elsewhere; `-m "not gpu"` (make test) selects all but gpu."""
    exprs = [*TIERS, "not gpu"]
    r = subprocess.run([sys.executable, "-c", _SELECT, json.dumps(_SAMPLE), *exprs], cwd=REPO, capture_output=True,
                       text=True, timeout=300, check=False)
    line = next((x for x in r.stdout.splitlines() if x.startswith("SELECTED ")), None)
    assert line is not None, r.stdout[-3000:] + r.stderr[-3000:]
    got = json.loads(line.removeprefix("SELECTED "))
    every = set(got["not gpu"][1]) | set(got["gpu"][1])

    def tier(nodeid: str) -> str:
        return _RAISED.get(nodeid) or FOLDERS[Path(nodeid.partition("::")[0]).parent.relative_to("tests").as_posix()]

    assert {Path(n.partition("::")[0]).as_posix() for n in every} == set(_SAMPLE)
    assert set(_RAISED) <= every
    for expr in TIERS:
        code, ids = got[expr]
        assert code in (0, 5), (expr, code)  # 5: nothing selected
        assert sorted(ids) == sorted(n for n in every if tier(n) == expr), expr
    assert sorted(got["not gpu"][1]) == sorted(n for n in every if tier(n) != "gpu")


#: the made-up test file names of examples (AGENTS.md's "where a test goes", this file's stray)
PLACEHOLDERS = {"test_x", "test_stray"}


def test_every_named_test_file_exists() -> None:
    """A test file named anywhere in the tracked tree (docs, comments, error messages, scripts) exists at that path:
    a move into a tier folder leaves no pointer to the old one (`scripts/move_test.py --mentions FILE` rewrites them).
    scripts/move_test.py itself names the old flat layout on purpose."""
    named = re.compile(r"\btests/(?:[a-z0-9_]+/)*test_[a-z0-9_]+\.py\b")
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    stale = []
    for name in files:
        if name.startswith(("generated/", "tests/golden/")) or name == "scripts/move_test.py":
            continue
        try:
            text = (REPO / name).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        stale += [f"{name}: {m}" for m in sorted(set(named.findall(text)))
                  if not (REPO / m).is_file() and Path(m).stem not in PLACEHOLDERS]
    assert stale == [], "test files named where they no longer are:\n" + "\n".join(stale)
