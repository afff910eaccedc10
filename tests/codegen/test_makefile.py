"""The Makefile: a misspelt variable is an error, not silently ignored; paths with spaces stay one word."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..helpers import COMMITTED, FIXTURE_HEADER, REPO


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_misspelt_variable_is_reported() -> None:
    r = subprocess.run(["make", "--no-print-directory", "help", "MIOPEN_VERISON=3.3.0"], capture_output=True,
                       text=True, cwd=REPO, check=False)
    assert r.returncode == 2
    assert "unknown variable MIOPEN_VERISON on the command line" in r.stderr and "MIOPEN_VERSION" in r.stderr
    r = subprocess.run(["make", "--no-print-directory", "help", "MIOPEN_VERSION=3.3.0", "PARSE_ARGS=-D A=1"],
                       capture_output=True, text=True, cwd=REPO, check=False)
    assert r.returncode == 0, r.stderr


_make_missing = pytest.mark.skipif(shutil.which("make") is None, reason="no make")


@pytest.fixture
def spaced(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the checkout's make inputs in a directory with a space, and the checkout's venv behind a path
    with a space (`make -o` keeps make from rebuilding it)."""
    root = tmp_path / "a repo"
    root.mkdir()
    for name in ("Makefile", "pyproject.toml", "requirements.lock", "setup.py"):
        shutil.copy2(REPO / name, root / name)
    shutil.copytree(REPO / "specs", root / "specs")
    shutil.copytree(REPO / "generated", root / "generated", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "docs").mkdir()
    shutil.copy2(REPO / "docs" / "api-changes.md", root / "docs" / "api-changes.md")
    venv = tmp_path / "the venv"
    venv.symlink_to(REPO / ".venv")
    return root, venv


def _make(root: Path, venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "--no-print-directory", "-o", f"{venv}/.installed", f"VENV={venv}", *args],
                          capture_output=True, text=True, cwd=root, check=False, timeout=600)


@_make_missing
def test_every_target_keeps_a_path_with_spaces_one_word(spaced: tuple[Path, Path], tmp_path: Path) -> None:
    """HEADER, SRC and VENV with spaces: every command a target runs gets each as one argument."""
    root, venv = spaced
    header, src = tmp_path / "my headers" / "miopen.h", tmp_path / "src tree"
    paths = (str(header), str(src), str(venv))
    targets = [t for t in re.findall(r"^\.PHONY:(.*)$", (REPO / "Makefile").read_text(), re.M)[0].split()
               if t not in ("FORCE", "venv", "help", "all", "real-miopen")]
    assert {"specs", "generate", "upgrade", "abi-check", "audit", "bench", "typecheck", "test"} <= set(targets)
    # `upgrade` runs even under -n (its recipe holds $(MAKE)): a python that prints its arguments stands in
    fake = tmp_path / "fake venv"
    (fake / "bin").mkdir(parents=True)
    (fake / "bin" / "python").write_text('#!/bin/sh\nfor a; do echo "ARG:$a"; done\n')
    (fake / "bin" / "python").chmod(0o755)
    r = _make(root, fake, "upgrade", f"HEADER={header}", "MIOPEN_VERSION=3.5.2")
    assert r.returncode == 0 and f"ARG:{header}\n" in r.stdout and "ARG:specs/miopen\n" in r.stdout, r.stdout
    targets.remove("upgrade")
    for target in targets:
        r = _make(root, venv, "-n", target, f"HEADER={header}", f"SRC={src}", "MIOPEN_VERSION=3.5.2")
        assert r.returncode == 0, (target, r.stderr)
        for line in r.stdout.splitlines():
            for path in paths:
                if path in line:
                    assert any(path in word for word in shlex.split(line)), (target, path, line)
                    # a split path leaves its head (with the slashes) as a word of its own
                    assert path.split()[0] not in shlex.split(line), line


@pytest.mark.long
@_make_missing
def test_specs_and_docs_with_spaces_in_every_path(spaced: tuple[Path, Path], tmp_path: Path) -> None:
    root, venv = spaced
    inc = tmp_path / "my include" / "miopen"
    shutil.copytree(FIXTURE_HEADER.parent, inc)
    r = _make(root, venv, "specs", f"HEADER={inc / 'miopen.h'}")  # its version read from the version.h beside it
    assert r.returncode == 0, r.stdout + r.stderr
    assert (root / "specs" / "miopen" / "3.4.1.yaml").is_file()
    r = _make(root, venv, "api-changes")
    releases = len(list((root / "specs" / "miopen").glob("*.*.*.yaml")))  # the committed ones and 3.4.1
    assert r.returncode == 0 and f"api-changes.md: {releases} releases" in r.stderr, r.stderr


@pytest.mark.long
@_make_missing
def test_check_generated_recovers_with_the_command_it_suggests(spaced: tuple[Path, Path]) -> None:
    """A render of generated/ cut short between its two renames (the process died): check-generated says what to
    run, and running exactly that puts everything right."""
    root, venv = spaced
    before = {p.relative_to(root / "generated"): p.read_bytes() for p in (root / "generated").rglob("*") if p.is_file()}
    (root / "generated").rename(root / ".generated.miogen-old")
    (root / ".generated.miogen-new").mkdir()
    (root / ".generated.miogen-new" / "api.py").write_text("# half of a render\n")
    r = _make(root, venv, "check-generated")
    assert r.returncode != 0
    suggested = re.search(r"run (make [a-z-]+)", r.stdout + r.stderr)
    assert suggested, r.stdout + r.stderr
    r = _make(root, venv, *shlex.split(suggested.group(1))[1:])
    assert r.returncode == 0, r.stdout + r.stderr
    r = _make(root, venv, "check-generated")
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(p.name for p in root.iterdir() if p.name.startswith(".")) == []
    after = {p.relative_to(root / "generated"): p.read_bytes() for p in (root / "generated").rglob("*")
             if p.is_file() and "__pycache__" not in p.parts}
    assert after == before
def test_every_variable_is_documented() -> None:
    """Each variable the Makefile accepts is described in its header comment and in README's table."""
    makefile = (REPO / "Makefile").read_text()
    known = re.search(r"^KNOWN_VARS := (.*)$", makefile, re.M)
    assert known is not None
    header = makefile[: makefile.index("\nPYTHON ")]
    table = [line for line in (REPO / "README.md").read_text().splitlines() if line.startswith("| `")]
    for var in known.group(1).split():
        assert re.search(rf"^#\s.*\b{var}=", header, re.M), var
        assert any(f"`{var}=" in line for line in table), var


@_make_missing
@pytest.mark.parametrize("given", [["MIOPEN_VERSION=3.2.0"], ["HEADER=/nowhere/miopen.h", "MIOPEN_VERSION=9.9.9"],
                                   ["PARSE_ARGS=-D A=1", "UPGRADE_TEST=false", "BENCH_ARGS=--strict"]])
def test_command_line_variables_reach_no_nested_make(given: list[str]) -> None:
    """A variable given to the outer make is in neither the environment nor the MAKEFLAGS of what its recipes run
    (a nested make, a test that runs make); where the venv lives travels on."""
    probe = ('leak-probe: ; @env | grep -E "^(MIOPEN_VERSION|HEADER|PARSE_ARGS|UPGRADE_TEST|BENCH_ARGS)=" || true; '
             'echo "MAKEFLAGS=$$MAKEFLAGS"; $(MAKE) --no-print-directory -f Makefile nested-probe\n'
             'nested-probe: ; @echo "nested MIOPEN_VERSION=$(MIOPEN_VERSION) HEADER=$(HEADER) VENV=$(VENV)"')
    r = subprocess.run(["make", "--no-print-directory", "--eval", probe, "leak-probe", *given, "VENV=.venv"],
                       capture_output=True, text=True, cwd=REPO, env={k: v for k, v in os.environ.items()
                                                                      if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")})
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    flags = next(x for x in lines if x.startswith("MAKEFLAGS="))
    pinned = (REPO / "specs" / "miopen" / "pinned").read_text().strip()
    for assignment in given:
        name = assignment.partition("=")[0]
        assert not any(x.startswith(f"{name}=") for x in lines), (name, lines)
        assert f"{name}=" not in flags.split("--eval")[0] + flags.rpartition(" -- ")[2], flags
    assert f"nested MIOPEN_VERSION={pinned} HEADER= VENV=.venv" in lines, lines


@_make_missing
def test_help_lists_every_target() -> None:
    """Every target the Makefile declares (.PHONY) has its line in `make help`."""
    makefile = (REPO / "Makefile").read_text()
    phony = re.search(r"^\.PHONY: (.*)$", makefile, re.M)
    assert phony is not None
    r = subprocess.run(["make", "--no-print-directory", "help"], capture_output=True, text=True, cwd=REPO, check=False)
    assert r.returncode == 0, r.stderr
    listed = {line.split()[1] for line in r.stdout.splitlines() if line.startswith("make ")}
    assert set(phony.group(1).split()) - {"FORCE"} == listed


@_make_missing
def test_make_test_names_its_phases() -> None:
    """`make test` says each phase before it runs: the versions, check-generated, then scripts/test_all.sh with the
    venv's interpreter and the release (what that script runs: test_test_all_runs_each_step_side_by_side)."""
    r = subprocess.run(["make", "--no-print-directory", "-n", "test"], capture_output=True, text=True, cwd=REPO,
                       check=False, timeout=120)
    assert r.returncode == 0, r.stderr
    phases = re.findall(r'echo "== phase: ([a-z-]+)"', r.stdout)
    assert phases == ["versions", "check-generated"], r.stdout
    pinned = (REPO / "specs" / "miopen" / "pinned").read_text().strip()
    assert re.search(rf'^bash scripts/test_all\.sh "[^"]*python[^"]*" {re.escape(pinned)}$', r.stdout, re.M), r.stdout


_FAKE = """#!/usr/bin/env bash
# a `-c` program (a script asking the generator, e.g. for the committed releases) runs in the real interpreter;
# any other call is recorded: the command's name, its arguments one a line, the variables the steps share
[ "$1" = -c ] && [ -n "${REAL_PY:-}" ] && exec "$REAL_PY" "$@"
f=$(mktemp "$FAKE_LOG/call.XXXXXX")
{ echo "$FAKE_NAME"; printf 'arg %s\\n' "$@"
  echo "release ${MIOGEN_TEST_RELEASE:-}"; echo "cache ${MIOGEN_TEST_CACHE:-}"; echo "pycache ${PYTHONPYCACHEPREFIX:-}"
} > "$f"
exit "${FAKE_STATUS:-0}"
"""


def _run_test_all(tmp_path: Path, release: str, make_status: int = 0, pytest_status: int = 0
                  ) -> tuple[subprocess.CompletedProcess[str], list[list[str]]]:
    """scripts/test_all.sh with a fake interpreter (every pytest it starts) and a fake `make` on PATH, each
    recording its calls; the calls, parsed, each as its lines."""
    log, bin_dir = tmp_path / "log", tmp_path / "bin"
    log.mkdir()
    bin_dir.mkdir()
    for name, status in (("make", make_status), ("python", pytest_status)):
        (bin_dir / name).write_text(_FAKE.replace("$FAKE_NAME", name).replace("${FAKE_STATUS:-0}", str(status)))
        (bin_dir / name).chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MIOGEN_TEST_", "MAKE", "MFLAGS"))}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env['PATH']}", FAKE_LOG=str(log), TMPDIR=str(tmp_path),
               REAL_PY=sys.executable)
    r = subprocess.run(["bash", str(REPO / "scripts" / "test_all.sh"), str(bin_dir / "python"), release],
                       capture_output=True, text=True, env=env, check=False, timeout=120)
    return r, [p.read_text().splitlines() for p in sorted(log.iterdir())]


def _value(call: list[str], key: str) -> str:
    return next(line.partition(" ")[2] for line in call if line.startswith(f"{key} "))


@pytest.mark.parametrize("release", [str(v) for v in (COMMITTED.versions[0], COMMITTED.pinned)])
def test_test_all_runs_each_step_side_by_side(tmp_path: Path, release: str) -> None:
    """scripts/test_all.sh runs `make typecheck`, the whole suite against `release` (every tier but gpu and the
    browser tests, one worker per core) and the runtime suite against every other committed release, all with one
    scratch folder (the stub cache, the bytecode) that is gone afterwards; it names each phase, the suite's file
    count, and exits 0."""
    r, calls = _run_test_all(tmp_path, release)
    assert r.returncode == 0, r.stdout + r.stderr
    makes = [c for c in calls if c[0] == "make"]
    assert [[line for line in c if line.startswith("arg ")] for c in makes] == [["arg --no-print-directory",
                                                                                 "arg typecheck"]]
    runs = [c for c in calls if c[0] == "python"]
    suite = [c for c in runs if "arg -n" in c]
    assert len(suite) == 1 and _value(suite[0], "release") == release
    args = [line.partition(" ")[2] for line in suite[0] if line.startswith("arg ")]
    assert args == ["-m", "pytest", "-n", "auto", "--dist", "worksteal", "-m", "not gpu and not browser", "tests"]
    others = {_value(c, "release") for c in runs if c not in suite}
    assert others == {str(v) for v in COMMITTED.versions} - {release}
    for c in runs:
        assert any(line.startswith("arg tests/runtime/test_") for line in c) or c in suite
    scratch = {str(Path(_value(c, key)).parent) for c in calls if c[0] == "python" for key in ("cache", "pycache")}
    assert len(scratch) == 1 and Path(scratch.pop()).parent == tmp_path, calls
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("miogen-")], "the scratch folder stayed"
    files = len(list((REPO / "tests").rglob("test_*.py")))
    phases = re.findall(r"^== phase: (.*)$", r.stdout, re.M)
    assert [p.split(" (")[0] for p in phases] == ["typecheck", "runtime suite per release", "pytest", "pytest done",
                                                  "typecheck done", "runtime suite per release done"], r.stdout
    assert f"pytest ({files} files against the MIOpen {release} stub" in phases[2]


@pytest.mark.parametrize("failing", ["make", "python"])
def test_test_all_fails_when_a_step_fails(tmp_path: Path, failing: str) -> None:
    """A failing `make typecheck` or pytest makes scripts/test_all.sh exit 1 (a failed typecheck says so) after
    every step has run."""
    pinned = str(COMMITTED.pinned)
    r, calls = _run_test_all(tmp_path, pinned, make_status=int(failing == "make"),
                             pytest_status=int(failing == "python"))
    assert r.returncode == 1, r.stdout + r.stderr
    assert ("make typecheck FAILED" in r.stdout) == (failing == "make"), r.stdout
    assert {c[0] for c in calls} == {"make", "python"}
    assert "== phase: runtime suite per release done" in r.stdout
