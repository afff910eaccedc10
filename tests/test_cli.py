"""`python -m codegen` / `miogen`: help, parse, check, and errors without tracebacks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from codegen.spec_io import dumps, load

from .helpers import FIXTURE_HEADER, REPO, fixture_spec


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "codegen", *args], capture_output=True, text=True, cwd=REPO)


def test_help_explains_every_option() -> None:
    out = _run("parse", "--help")
    assert out.returncode == 0
    for opt in ("-I DIR", "-D NAME[=VALUE]", "--beta", "--miopen-version X.Y.Z", "--rocm-release", "--language",
                "--no-shims", "--builtin-include", "--target", "-o SPEC.yaml"):
        assert opt in out.stdout, opt
    top = _run("--help")
    assert "parse" in top.stdout and "check" in top.stdout


def test_parse_writes_the_spec(tmp_path: Path) -> None:
    out = tmp_path / "spec.yaml"
    r = _run("parse", str(FIXTURE_HEADER), "--beta", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "47 functions (4 beta)" in r.stderr
    assert out.read_text() == dumps(fixture_spec(True))


def test_parse_with_defines_and_includes(tmp_path: Path) -> None:
    import shutil

    out = tmp_path / "spec.yaml"
    header = tmp_path / "miopen.h"  # no version.h beside this copy
    shutil.copy(FIXTURE_HEADER, header)
    r = _run("parse", str(header), "-D", "MIOGEN_UNUSED=1", "-I", str(tmp_path),
             "--miopen-version", "3.3.0", "-o", str(out))
    assert r.returncode == 0, r.stderr
    spec = load(out)
    assert spec.miopen_version == "3.3.0" and spec.rocm_release == "rocm-6.3.0"
    assert spec.parse.defines == ("__HIP_PLATFORM_AMD__", "MIOGEN_UNUSED=1")
    assert not spec.parse.beta and len(spec.functions) == 43


def test_version_option_must_agree_with_version_h(tmp_path: Path) -> None:
    r = _run("parse", str(FIXTURE_HEADER), "--miopen-version", "3.3.0", "-o", str(tmp_path / "x.yaml"))
    assert r.returncode == 2 and "--miopen-version 3.3.0 disagrees with" in r.stderr and "says 3.4.1" in r.stderr


def test_output_and_option_mistakes(tmp_path: Path) -> None:
    r = _run("parse", str(FIXTURE_HEADER), "-o", str(tmp_path))  # a directory: named after the version
    assert r.returncode == 0 and (tmp_path / "3.4.1.yaml").is_file()
    r = _run("parse", str(FIXTURE_HEADER), "-o", str(tmp_path / "3.4.1.yaml" / "x.yaml"))  # under a file
    assert r.returncode == 2 and r.stderr.startswith("miogen: error:") and "Traceback" not in r.stderr
    r = _run("parse", str(FIXTURE_HEADER), "--builtin-include", str(tmp_path), "-o", str(tmp_path / "x.yaml"))
    assert r.returncode == 2 and "--builtin-include" in r.stderr and "no stddef.h" in r.stderr
    (tmp_path / "file").write_text("")
    spec = tmp_path / "s.yaml"
    assert _run("parse", str(FIXTURE_HEADER), "--beta", "-o", str(spec)).returncode == 0
    r = _run("render", str(spec), "--annotations", str(REPO / "tests/fixtures/annotations.yaml"), "-o",
             str(tmp_path / "file"))
    assert r.returncode == 2 and "exists and is not a directory" in r.stderr and "Traceback" not in r.stderr


def test_errors_are_messages_not_tracebacks(tmp_path: Path) -> None:
    bad = tmp_path / "empty.h"
    bad.write_text("")
    r = _run("parse", str(bad), "-o", str(tmp_path / "x.yaml"))
    assert r.returncode == 2
    assert r.stderr.startswith("miogen: error:") and "Traceback" not in r.stderr
    assert not (tmp_path / "x.yaml").exists()
    r = _run("parse", str(FIXTURE_HEADER), "--no-shims", "-o", str(tmp_path / "x.yaml"))
    assert r.returncode == 2 and "'miopen/config.h' file not found" in r.stderr and "Traceback" not in r.stderr


def test_check(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(dumps(fixture_spec()))
    r = _run("check", str(good))
    assert r.returncode == 0 and "ok: MIOpen 3.4.1: 47 functions" in r.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text(dumps(fixture_spec()).replace("  tag: miopenHandle\n", "  tag: [miopenHandle]\n", 1))
    r = _run("check", str(bad))
    assert r.returncode == 2 and "handles[0].tag: expected a string; got list" in r.stderr
    assert "Traceback" not in r.stderr


def test_console_script_is_declared() -> None:
    text = (REPO / "pyproject.toml").read_text()
    assert 'miogen = "codegen.cli:main"' in text


def test_unconfigured_version_h_gets_its_own_message(tmp_path: Path) -> None:
    import shutil

    inc = tmp_path / "miopen"
    inc.mkdir()
    shutil.copy(FIXTURE_HEADER, inc / "miopen.h")
    # version.h.in of a source tree, copied as is: CMake never replaced the @...@ values
    (inc / "version.h").write_text("#define MIOPEN_VERSION_MAJOR @MIOpen_VERSION_MAJOR@\n"
                                   "#define MIOPEN_VERSION_MINOR @MIOpen_VERSION_MINOR@\n"
                                   "#define MIOPEN_VERSION_PATCH @MIOpen_VERSION_PATCH@\n")
    r = _run("parse", str(inc / "miopen.h"), "-o", str(tmp_path / "x.yaml"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "MIOPEN_VERSION_MAJOR is @MIOpen_VERSION_MAJOR@, a value CMake never filled in" in r.stderr
    assert "pass --miopen-version X.Y.Z" in r.stderr and "no version.h" not in r.stderr
    r = _run("header-version", str(inc / "miopen.h"))
    assert r.returncode == 2 and "CMake never filled in" in r.stderr
    # with the version given, the unconfigured file is no obstacle
    r = _run("parse", str(inc / "miopen.h"), "--miopen-version", "3.4.1", "-o", str(tmp_path / "x.yaml"))
    assert r.returncode == 0, r.stderr
    (inc / "version.h").write_text("#define MIOPEN_VERSION_MAJOR 3\n")
    r = _run("header-version", str(inc / "miopen.h"))
    assert r.returncode == 2 and "it does not define MIOPEN_VERSION_MINOR" in r.stderr


def test_header_version_prints_the_release() -> None:
    r = _run("header-version", str(FIXTURE_HEADER))
    assert r.returncode == 0 and r.stdout == "3.4.1\n"


def test_abi_check_removes_its_temp_dir(tmp_path: Path) -> None:
    import os

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    args = [sys.executable, "-m", "codegen", "abi-check", str(FIXTURE_HEADER), "--annotations",
            str(REPO / "tests/fixtures/annotations.yaml")]
    r = subprocess.run(args, capture_output=True, text=True, cwd=REPO, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert list(tmp.iterdir()) == []
    keep = tmp_path / "keep"
    r = subprocess.run([*args, "--keep", str(keep)], capture_output=True, text=True, cwd=REPO, env=env)
    assert r.returncode == 0 and any(keep.iterdir()) and list(tmp.iterdir()) == []
