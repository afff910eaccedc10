"""scripts/move_test.py in a scratch git repository shaped like tests/: a stray test file moved into a tier folder
(`git mv`, its imports of tests/'s shared modules and of other tests reach them from there, and it imports), the
pages naming its old path rewritten with --mentions, imports a merge brought back rewritten with --imports; both
rewrites idempotent; a wrong folder or a taken place refused."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..helpers import REPO
from ..tiers import FOLDERS

_STRAY = """from __future__ import annotations

from . import helpers
from .conftest import Libs
from .helpers import ROOT
from .real.client import call
from .test_other import VALUE

WHAT = (helpers.ROOT, Libs, ROOT, call(), VALUE)
"""


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A git repository with scripts/move_test.py, tests/tiers.py, the shared modules of tests/ root, every tier
    folder (its __init__.py and conftest.py), another test in tests/codegen and a stray tests/test_x.py."""
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    shutil.copy2(REPO / "scripts" / "move_test.py", root / "scripts")
    tests = root / "tests"
    (tests / "real").mkdir(parents=True)
    shutil.copy2(REPO / "tests" / "tiers.py", tests)
    for name, text in {"__init__.py": "", "helpers.py": "ROOT = 'root'\n", "conftest.py": "class Libs:\n    pass\n",
                       "real/__init__.py": "", "real/client.py": "def call() -> int:\n    return 1\n",
                       "test_x.py": _STRAY}.items():
        (tests / name).write_text(text)
    for folder in FOLDERS:
        (tests / folder).mkdir(parents=True, exist_ok=True)
        (tests / folder / "__init__.py").write_text("")
        (tests / folder / "conftest.py").write_text("MARK = 'the folder marks its tier'\n")
    (tests / "codegen" / "test_other.py").write_text("VALUE = 2\n")
    (root / "docs").mkdir()
    (root / "docs" / "page.md").write_text("Run `tests/test_x.py`; tests/test_stray.py is nowhere.\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "scratch"], cwd=root,
                   check=True)
    return root


def _move(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "scripts/move_test.py", *args], cwd=root, capture_output=True, text=True,
                          check=False, timeout=60)


@pytest.mark.parametrize("folder", ["runtime", "real/kernels"])
def test_a_stray_test_moves_into_its_tier_folder_and_still_imports(scratch: Path, folder: str) -> None:
    r = _move(scratch, "tests/test_x.py", folder)
    assert r.returncode == 0, r.stderr
    assert f"moved tests/test_x.py to tests/{folder}/test_x.py (tier {FOLDERS[folder]})" in r.stdout
    staged = subprocess.run(["git", "diff", "--cached", "--name-status"], cwd=scratch, capture_output=True,
                            text=True, check=True).stdout
    assert staged == f"R100\ttests/test_x.py\ttests/{folder}/test_x.py\n", staged  # git mv: the file as it was
    up = "." * (folder.count("/") + 2)
    moved = scratch / "tests" / folder / "test_x.py"
    assert moved.read_text() == (_STRAY.replace("from . import", f"from {up} import")
                                 .replace("from .conftest", f"from {up}conftest")
                                 .replace("from .helpers", f"from {up}helpers")
                                 .replace("from .real.client", f"from {up}real.client")
                                 .replace("from .test_other", f"from {up}codegen.test_other"))
    module = f"tests.{folder.replace('/', '.')}.test_x"
    r = subprocess.run([sys.executable, "-c", f"import {module}; print({module}.WHAT)"], cwd=scratch,
                       capture_output=True, text=True, check=False, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "('root', <class 'tests.conftest.Libs'>, 'root', 1, 2)", r.stderr

    before = moved.read_text()
    r = _move(scratch, "--imports", f"tests/{folder}/test_x.py")  # a second pass changes nothing
    assert r.returncode == 0 and r.stdout == "" and moved.read_text() == before, r.stdout + r.stderr

    r = _move(scratch, "--mentions", "docs/page.md")
    assert r.returncode == 0 and r.stdout == "docs/page.md: test file paths rewritten\n", r.stdout + r.stderr
    page = (scratch / "docs" / "page.md").read_text()
    assert page == f"Run `tests/{folder}/test_x.py`; tests/test_stray.py is nowhere.\n"
    r = _move(scratch, "--mentions", "docs/page.md")
    assert r.stdout == "" and (scratch / "docs" / "page.md").read_text() == page


def test_imports_a_merge_brings_back_are_rewritten(scratch: Path) -> None:
    """After the move, a branch's edit of the old file arrives through rename detection with flat imports:
    --imports gives them the tier folder's depth and leaves the folder's own modules alone."""
    assert _move(scratch, "tests/test_x.py", "runtime").returncode == 0
    moved = scratch / "tests" / "runtime" / "test_x.py"
    (scratch / "tests" / "runtime" / "local.py").write_text("HERE = 3\n")
    moved.write_text(moved.read_text() + "from .helpers import ROOT as AGAIN\nfrom .local import HERE\n")
    r = _move(scratch, "--imports", "tests/runtime/test_x.py")
    assert r.returncode == 0 and r.stdout == "tests/runtime/test_x.py: imports rewritten\n", r.stdout + r.stderr
    assert moved.read_text().endswith("from ..helpers import ROOT as AGAIN\nfrom .local import HERE\n")


def test_a_wrong_folder_or_a_taken_place_is_refused(scratch: Path) -> None:
    r = _move(scratch, "tests/test_x.py", "nowhere")
    assert r.returncode == 2 and "give FILE FOLDER, FOLDER one of codegen, runtime" in r.stderr, r.stderr
    (scratch / "tests" / "runtime" / "test_x.py").write_text("")
    r = _move(scratch, "tests/test_x.py", "runtime")
    assert r.returncode == 2 and "tests/runtime/test_x.py exists" in r.stderr, r.stderr
    assert (scratch / "tests" / "test_x.py").read_text() == _STRAY
