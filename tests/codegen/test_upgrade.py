"""`make upgrade` / `miogen upgrade` add a release or leave nothing behind.

The whole flow on a copy of the checkout and a synthetic next release (the newest committed one with a
function more), and the rollback on every way a run ends early: a failing verify command, a failing
write, and SIGINT, SIGTERM or SIGHUP while a verify command runs."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from miogen.spec.spec_io import load
from miogen.spec.releases import Version

from ..helpers import COMMITTED, REPO, SPECS, fixture_spec, next_release_header, release_header, upgrade_specs_dir

_NEW = "MIOPEN_EXPORT miopenStatus_t miopenNewCount(miopenHandle_t handle, int* count);"


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    """This environment without what an enclosing make or pytest run set; temp files under `tmp`."""
    drop = ("PYTHONPATH", "PYTHONHOME", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MIOGEN_TEST_RELEASE", "VIRTUAL_ENV",
            "PIP_FIND_LINKS")
    return {**{k: v for k, v in os.environ.items() if k not in drop}, "TMPDIR": str(tmp), **extra}


def _tree(*paths: Path) -> dict[str, bytes | None]:
    """Every file under `paths` (or the path itself), by path, with its bytes; None for a directory."""
    out: dict[str, bytes | None] = {}
    for root in paths:
        if root.is_file():
            out[str(root)] = root.read_bytes()
        elif root.is_dir():
            out[str(root)] = None
            for p in sorted(root.rglob("*")):
                out[str(p)] = p.read_bytes() if p.is_file() else None
    return out


def _running(pid: int) -> bool:
    """The process exists and has not ended (a zombie that nobody reaps has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


class _Case:
    """A spec directory pinned at the fixture's 3.4.1, a 3.5.0 header with one function more, and two
    paths a verify command rewrites: a directory with a file, and a file that does not exist yet."""

    def __init__(self, tmp_path: Path) -> None:
        self.specs = upgrade_specs_dir(tmp_path, fixture_spec())
        self.header = release_header(tmp_path / "h", _NEW, "3.5.0")
        self.out = tmp_path / "generated"
        self.out.mkdir()
        (self.out / "a.py").write_text("old\n")
        self.docs = tmp_path / "changes.md"
        self.tmp = tmp_path / "tmp"
        self.tmp.mkdir()
        self.before = _tree(self.specs, self.out, self.docs)
        self.rewrite = (f"echo new > {shlex.quote(str(self.out / 'a.py'))} && touch {shlex.quote(str(self.out / 'b.py'))}"
                        f" && echo x > {shlex.quote(str(self.docs))}")

    def args(self, *verify: str) -> list[str]:
        out = [sys.executable, "-m", "miogen", "upgrade", str(self.header), "--specs", str(self.specs), "--no-abi-check",
               "--restore", str(self.out), "--restore", str(self.docs)]
        for cmd in verify:
            out += ["--verify", cmd]
        return out

    def assert_rolled_back(self, stderr: str) -> None:
        assert _tree(self.specs, self.out, self.docs) == self.before
        assert list(self.tmp.glob("miogen-upgrade-*")) == []  # the snapshot is gone too
        lines = [line for line in stderr.splitlines() if "rolled back" in line]
        assert len(lines) == 1 and "pinned 3.4.1 again" in lines[0], stderr
        assert f"restored {self.out}, {self.docs}" in lines[0] and "Traceback" not in stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_signal_during_verify_rolls_back(tmp_path: Path, sig: signal.Signals) -> None:
    case = _Case(tmp_path)
    block = tmp_path / "block"
    os.mkfifo(block)
    # the verify command rewrites the restore paths, starts a child that blocks (reading a FIFO nobody
    # writes), says so with both process ids, and waits for it
    verify = f"{case.rewrite} && cat {shlex.quote(str(block))} & echo ready $$ $!; wait"
    proc = subprocess.Popen(case.args(verify), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                            env=_env(case.tmp))
    pids: list[int] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("ready "):
                pids = [int(x) for x in line.split()[1:]]
                break
        assert len(pids) == 2, proc.communicate(timeout=60)
        assert all(_running(pid) for pid in pids)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 128 + sig, err
        assert [pid for pid in pids if _running(pid)] == []  # the verify command and its child are gone
        assert f"upgrade failed in phase verify: interrupted by {sig.name}\n" in err
        assert "the log to read: " in err and "ready " in Path(err.split("the log to read: ")[1].split()[0]).read_text()
        case.assert_rolled_back(err)
    finally:
        for pid in [proc.pid, *pids]:
            if _running(pid):
                os.kill(pid, signal.SIGKILL)
        proc.wait()


def test_a_failing_verify_rolls_back(tmp_path: Path) -> None:
    case = _Case(tmp_path)
    r = subprocess.run(case.args(case.rewrite, "exit 3"), capture_output=True, text=True, cwd=REPO,
                       env=_env(case.tmp), check=False)
    assert r.returncode == 1, r.stderr
    assert "upgrade failed in phase verify: `exit 3` failed (exit 3)\nmiogen: rolled back: removed " in r.stderr
    case.assert_rolled_back(r.stderr)


def test_a_failing_spec_write_rolls_back(tmp_path: Path) -> None:
    case = _Case(tmp_path)
    (case.specs / ".3.5.0.yaml.tmp").mkdir()  # where the spec is staged: a directory, so writing it fails
    case.before = _tree(case.specs, case.out, case.docs)
    r = subprocess.run(case.args(case.rewrite), capture_output=True, text=True, cwd=REPO, env=_env(case.tmp),
                       check=False)
    assert r.returncode == 2, r.stderr
    assert f"miogen: error: {case.specs / '.3.5.0.yaml.tmp'}: " in r.stderr
    case.assert_rolled_back(r.stderr)


def test_a_failing_pin_write_rolls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    from miogen.cli import main

    case = _Case(tmp_path)
    write_text = Path.write_text

    def failing(self: Path, *args: object, **kw: object) -> int:
        if self.name == "pinned":
            raise OSError(28, "No space left on device", str(self))
        return write_text(self, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "write_text", failing)
    monkeypatch.setattr("tempfile.tempdir", str(case.tmp))
    assert main(case.args(case.rewrite)[3:]) == 2  # the spec was in place; writing the pin fails
    err = capsys.readouterr().err
    assert "No space left on device" in err and f"removed {case.specs / '3.5.0.yaml'}, " in err
    assert "upgrade failed in phase write: " in err
    case.assert_rolled_back(err)


def test_a_signal_while_taking_the_snapshot_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from miogen.workflow import transaction
    from miogen.cli import main

    case = _Case(tmp_path)

    def interrupted(*_: object, **__: object) -> None:
        raise transaction.Interrupted(signal.SIGTERM)

    monkeypatch.setattr(transaction.shutil, "copytree", interrupted)
    monkeypatch.setattr("tempfile.tempdir", str(case.tmp))
    assert main(case.args(case.rewrite)[3:]) == 128 + signal.SIGTERM
    assert "interrupted by SIGTERM before anything was written" in capsys.readouterr().err
    assert _tree(case.specs, case.out, case.docs) == case.before
    assert list(case.tmp.glob("miogen-upgrade-*")) == []


# ------------------------------------------------------------------ the whole flow, on a copy of the checkout


def _copy_checkout(dest: Path) -> None:
    """The checkout's files (tracked or not ignored, as they are in the working tree)."""
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, names):
        src = REPO / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            (dest / name).write_bytes(src.read_bytes())
            (dest / name).chmod(src.stat().st_mode)


@pytest.mark.long
def test_make_upgrade_adds_a_release_end_to_end(tmp_path: Path) -> None:
    """`make upgrade HEADER=...` on a copy of this checkout, with the newest release plus one function
    as the next release: the spec is added and pinned, generated/ holds the release, the editable
    install and the wheel list its sub-package, and the verification (make generate, make venv, a
    focused UPGRADE_TEST: the release matrix and the wheel) passes."""
    repo = tmp_path / "repo"
    _copy_checkout(repo)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    # the copy's own venv (its editable install links the copy's files) with this environment's packages
    # on a path entry, so that `make` installs miogen offline: no index, no isolated build
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(repo / ".venv")], check=True)
    site = Path(subprocess.run([str(repo / ".venv" / "bin" / "python"), "-c",
                                "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "zz-test-env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = _env(tmp, PIP_NO_INDEX="1", PIP_NO_BUILD_ISOLATION="0")

    newest = COMMITTED.versions[-1]
    next_minor = Version(newest.major, newest.minor + 1, 0)
    new, package = str(next_minor), next_minor.module
    header = next_release_header(load(SPECS / f"{newest}.yaml"), tmp_path / "include", new,
                                 "miopenStatus_t miopenSynthNext(miopenHandle_t handle, int flags);")
    focused = ("$(PY) -m pytest -q -p no:cacheprovider tests/runtime/test_releases.py tests/real/library/test_real_specs.py "
               "tests/codegen/test_release_lists.py tests/codegen/test_packaging.py::test_wheel_has_every_committed_release")
    r = subprocess.run(["make", "--no-print-directory", "upgrade", f"HEADER={header}", f"UPGRADE_TEST={focused}"],
                       capture_output=True, text=True, cwd=repo, env=env, timeout=600, check=False)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    assert f"## MIOpen {newest} → {new}" in r.stdout and "### Functions added (1)\n\n- `miopenSynthNext`" in r.stdout
    assert "0 breaking" in r.stdout
    for phase, step in (("render", "make --no-print-directory generate"), ("venv", "make --no-print-directory venv"),
                        ("tests", "-m pytest -q")):
        assert any(line.startswith(f"upgrade [{phase}] ") and step in line for line in r.stdout.splitlines()), (step, out)
    for phase in ("parse", "diff", "gate", "abi", "write", "render", "venv", "tests"):  # each says how long it took
        assert re.search(rf"^upgrade \[{phase}\] done in \d+\.\d s$", r.stdout, re.M), (phase, out)
    assert re.search(rf"^upgrade: added MIOpen {re.escape(new)} in \d+\.\d s \(parse ", r.stdout, re.M), out
    assert " failed" not in out and " passed" in out
    # the release is committed and pinned, rendered, and documented
    specs = repo / "specs" / "miopen"
    assert (specs / "pinned").read_text() == new + "\n"
    from miogen.spec.records import load_records

    record = load_records(specs)[Version.parse(new)]  # its record: where the header came from, what the ABI check found
    assert str(header) in record.header and record.abi.endswith("functions called through, 0 failing"), record
    assert load(specs / f"{new}.yaml").function("miopenSynthNext").params[1].name == "flags"
    assert (repo / "generated" / package / "api.py").is_file()
    assert "miopenSynthNext" in (repo / "generated" / package / "raw.py").read_text()
    assert f"## MIOpen {newest} → {new}" in (repo / "docs" / "api-changes.md").read_text()
    # the editable install has the new sub-package (from outside the copy: nothing comes from the cwd)
    r = subprocess.run([str(repo / ".venv" / "bin" / "python"), "-c",
                        f"import miopen, miopen._generated.{package} as m; print(miopen.RELEASES[-1]); print(m.__file__)"],
                       capture_output=True, text=True, cwd=tmp_path, env=env, check=False)
    assert r.returncode == 0, r.stderr
    last, where = r.stdout.split()
    assert last == new and Path(where).is_relative_to(repo)
    assert list(tmp.glob("miogen-upgrade-*")) == []
