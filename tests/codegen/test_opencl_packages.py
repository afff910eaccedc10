"""What PoCL and the OpenCL build of MIOpen need from Debian has one home, scripts/opencl-packages.txt: `.ci/run`
installs exactly its packages on a machine that has none, `make examples` names them, and no other tracked file
carries a copy of the list."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ..helpers import REPO

LIST = REPO / "scripts" / "opencl-packages.txt"


def _packages() -> list[str]:
    return LIST.read_text(encoding="utf-8").split()


def test_ci_installs_the_list_on_a_fresh_machine(tmp_path: Path) -> None:
    """.ci/run's package step and its OpenCL line, run where dpkg knows no package and apt-get records what it is
    asked: one `apt-get install` of exactly the list's packages."""
    script = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    start = script.index("need_packages() {")
    body = script[start:script.index("}", start) + 1]
    calls = [line for line in script if line.startswith('need_packages "OpenCL MIOpen"')]
    assert len(calls) == 1, calls
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "dpkg").write_text("#!/bin/sh\nexit 1\n")
    (bin_dir / "apt-get").write_text(f'#!/bin/sh\necho "$*" >> {tmp_path}/apt-get.log\n')
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", "\n".join([*body, calls[0]])], cwd=REPO, capture_output=True,
                       text=True, check=False, timeout=60, env={**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"})
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert (tmp_path / "apt-get.log").read_text().splitlines() == [
        "install -y --no-install-recommends " + " ".join(_packages())]


def test_make_examples_names_the_list() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("run_examples", REPO / "scripts" / "run_examples.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.PACKAGES.split() == _packages()


def test_no_other_tracked_file_copies_the_list() -> None:
    """A line naming PoCL's package with any other of the list's is a second copy of it (each reader takes the
    file instead: `$(cat scripts/opencl-packages.txt)`)."""
    pocl, *rest = _packages()
    assert pocl == "pocl-opencl-icd"
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    copies = []
    for name in files:
        path = REPO / name
        if path == LIST or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        copies += [f"{name}: {line.strip()}" for line in text.splitlines()
                   if pocl in line and any(p in line for p in rest)]
    assert copies == [], "copies of scripts/opencl-packages.txt:\n" + "\n".join(copies)
