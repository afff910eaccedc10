"""`python -m miogen` / `miogen`: help, parse, check, and errors without tracebacks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from miogen.spec.spec_io import dumps, load
from miogen.spec.releases import Version

from ..helpers import FIXTURE_HEADER, REPO, fixture_spec


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "miogen", *args], capture_output=True, text=True, cwd=REPO)


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
    assert spec.version == Version(3, 3, 0) and spec.release == "rocm-6.3.0"
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
    """The `miogen` command and `python -m miogen` run `__main__.command`: the collector's command thresholds,
    then `cli.run` (main, then the shutdown's freeze); then `end` with its status."""
    import importlib
    import tomllib

    entry = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]["miogen"]
    module, _, attr = entry.partition(":")
    assert (module, attr) == ("miogen.__main__", "script")
    main = importlib.import_module(module)
    assert 'if __name__ == "__main__":\n    end(command())' in (REPO / "codegen" / "__main__.py").read_text()
    calls: list[object] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("miogen.base.gcpolicy.for_command", lambda: calls.append("thresholds"))
        mp.setattr("miogen.cli.run", lambda: calls.append("run") or 7)
        mp.setattr(main, "end", calls.append)
        getattr(main, attr)()
    assert calls == ["thresholds", "run", 7]


@pytest.mark.parametrize("how", ["-m", "script"])
def test_the_command_ends_with_its_status_its_output_and_its_exit_handlers(tmp_path: Path, how: str) -> None:
    """`end` (the process's end without the interpreter's teardown) keeps what an ordinary exit does: the status,
    everything printed (stdout and stderr, a pipe's buffers too), and the exit handlers run."""
    code = ("import atexit, sys\nfrom miogen import __main__ as m\n"
            "atexit.register(lambda: open(sys.argv[1], 'w').write('ran'))\n"
            "m.command = lambda: (print('out ' * 5000), print('err', file=sys.stderr), 5)[-1]\n"
            + ("m.end(m.command())\n" if how == "-m" else "m.script()\n"))
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "ran")], capture_output=True, text=True)
    assert (r.returncode, r.stdout, r.stderr) == (5, "out " * 5000 + "\n", "err\n")
    assert (tmp_path / "ran").read_text() == "ran"


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


@pytest.mark.long
def test_abi_check_removes_its_temp_dir(tmp_path: Path) -> None:
    import os

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    args = [sys.executable, "-m", "miogen", "abi-check", str(FIXTURE_HEADER), "--annotations",
            str(REPO / "tests/fixtures/annotations.yaml")]
    r = subprocess.run(args, capture_output=True, text=True, cwd=REPO, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert list(tmp.iterdir()) == []
    keep = tmp_path / "keep"
    r = subprocess.run([*args, "--keep", str(keep)], capture_output=True, text=True, cwd=REPO, env=env)
    assert r.returncode == 0 and any(keep.iterdir()) and list(tmp.iterdir()) == []


def _path_options() -> list[tuple[str, str, object]]:
    """(command, option, its argparse type) for every option of every miogen command that takes a path."""
    import argparse

    from miogen.base import files
    from miogen.cli import _parser

    found = []
    top = _parser()
    subs = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    for command, sub in subs.choices.items():
        for action in sub._actions:
            if action.type in files.PATH_TYPES:
                found.append((command, action.option_strings[0] if action.option_strings else action.dest, action.type))
            elif action.metavar and any(w in str(action.metavar) for w in ("DIR", "YAML", "FILE", "HEADER", "SRC",
                                                                           ".yaml", ".md", "PATH")):
                raise AssertionError(f"{command} {action.dest}: a path option without a path type of miogen.base.files")
    return found


def test_one_command_parser_is_the_full_parsers_part(capsys: pytest.CaptureFixture[str]) -> None:
    """Arguments naming a command are read by a parser with only that command's subparser: for every command it
    reads arguments as the full parser does and shows the same help; anything else gets the full parser."""
    import argparse

    from miogen import cli

    def subparser(top: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
        subs = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
        return subs.choices[name]  # type: ignore[no-any-return]

    full = cli._parser()
    assert set(subparser(full, n).prog for n in cli._COMMANDS) == {f"miogen {n}" for n in cli._COMMANDS}
    for name in cli._COMMANDS:
        alone = cli._parser(name)
        subs = next(a for a in alone._actions if isinstance(a, argparse._SubParsersAction))
        assert list(subs.choices) == [name]
        assert subparser(alone, name).format_help() == subparser(full, name).format_help()
    argv = ["parse", "h.h", "--beta", "-D", "X=1", "-o", "out.yaml"]
    assert vars(cli._parser("parse").parse_args(argv)) == vars(full.parse_args(argv))
    with pytest.raises(SystemExit):  # no command named first: the full parser, which lists every command
        cli._main(["--help"])
    shown = capsys.readouterr().out
    assert all(name in shown for name in cli._COMMANDS)


def test_help_is_laid_out_as_argparse_lays_it_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line's help formatter (which finds the terminal's width without shutil) gives argparse's own
    width, and the same help for every command, whatever $COLUMNS says (unset, a number, zero, not a number)."""
    import argparse

    from miogen import cli

    for columns in (None, "120", "40", "0", "-5", "wide"):
        if columns is None:
            monkeypatch.delenv("COLUMNS", raising=False)
        else:
            monkeypatch.setenv("COLUMNS", columns)
        assert cli._HelpFormatter("miogen")._width == argparse.HelpFormatter("miogen")._width, columns
        ours = cli._parser()
        subs = next(a for a in ours._actions if isinstance(a, argparse._SubParsersAction))
        for name, sub in subs.choices.items():
            assert sub.formatter_class is cli._HelpFormatter
            theirs = argparse.ArgumentParser(prog=sub.prog, description=sub.description, usage=sub.usage)
            theirs._actions, theirs._action_groups = sub._actions, sub._action_groups
            theirs._mutually_exclusive_groups = sub._mutually_exclusive_groups
            assert sub.format_help() == theirs.format_help(), (columns, name)


@pytest.mark.long
def test_every_path_option_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    """A FIFO (or a device) given for any path option is refused before anything opens it."""
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    options = _path_options()
    assert len(options) >= 25
    for command, option, _ in options:
        for bad in (str(fifo), "/dev/zero"):
            argv = [command, option, bad] if option.startswith("-") else [command, bad]
            try:
                r = subprocess.run([sys.executable, "-m", "miogen", *argv], capture_output=True, text=True, cwd=REPO,
                                   timeout=30, stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                raise AssertionError(f"miogen {' '.join(argv)} hangs") from None
            assert r.returncode == 2 and "Traceback" not in r.stderr, (argv, r.stderr)
            assert f"{bad}: " in r.stderr and ("FIFO" in r.stderr or "device" in r.stderr), (argv, r.stderr)


@pytest.mark.long
def test_o_into_a_directory_means_the_same_for_every_command(tmp_path: Path) -> None:
    """An existing directory, or a path ending in /, means "write into it" (parse, changes)."""
    specs = [str(REPO / "specs/miopen/3.3.0.yaml"), str(REPO / "specs/miopen/3.5.2.yaml")]
    for into in (f"{tmp_path}/new/", str(tmp_path / "new")):  # made by the first, existing for the second
        r = _run("parse", str(FIXTURE_HEADER), "-o", into)
        assert r.returncode == 0, r.stderr
        assert (tmp_path / "new" / "3.4.1.yaml").is_file() and not (tmp_path / "new.yaml").exists()
        r = _run("changes", *specs, "-o", into)
        assert r.returncode == 0 and (tmp_path / "new" / "api-changes.md").is_file(), r.stderr
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == ["3.4.1.yaml", "api-changes.md"]
    r = _run("changes", *specs, "-o", str(tmp_path / "plain.md"))
    assert r.returncode == 0 and (tmp_path / "plain.md").read_text() == (tmp_path / "new/api-changes.md").read_text()


def test_a_header_of_another_library_is_named_as_such(tmp_path: Path) -> None:
    """Not the target's header: the message says what was expected (from the target's facts) and how to fix it."""
    cudnn = tmp_path / "cudnn.h"
    cudnn.write_text("typedef enum { CUDNN_STATUS_SUCCESS = 0 } cudnnStatus_t;\n"
                     "typedef struct cudnnContext *cudnnHandle_t;\ncudnnStatus_t cudnnCreate(cudnnHandle_t *handle);\n")
    r = _run("parse", str(cudnn), "--miopen-version", "3.3.0", "-o", str(tmp_path / "x.yaml"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert f"{cudnn}: this does not look like MIOpen's miopen.h" in r.stderr
    assert "none of the target's functions (prefix miopen*)" in r.stderr and "e.g. cudnnCreate" in r.stderr
    assert "--target" in r.stderr and not (tmp_path / "x.yaml").exists()
    # the other way round: the facts come from the target file, not from the code
    mio = tmp_path / "miopen.h"
    mio.write_text("typedef enum { miopenStatusSuccess = 0 } miopenStatus_t;\nmiopenStatus_t miopenCreate(void **h);\n")
    r = _run("parse", str(mio), "--target", str(REPO / "specs/cudnn/target.yaml"), "--miopen-version",
             "9.19.0", "-o", str(tmp_path / "x.yaml"))
    assert r.returncode == 2 and "does not look like cuDNN's cudnn_ops.h" in r.stderr, r.stderr
    assert "prefix cudnn*" in r.stderr and "Traceback" not in r.stderr
    for content, said in ((b"", "the file is empty"), (b"\x7fELF\x02\0\0", "binary file"),
                          (b"int x;\n/* \xff */\n", ":2:4: not UTF-8")):
        (tmp_path / "h.h").write_bytes(content)
        r = _run("parse", str(tmp_path / "h.h"), "-o", str(tmp_path / "x.yaml"))
        assert r.returncode == 2 and said in r.stderr and "expected MIOpen's miopen.h" in r.stderr, r.stderr


def test_run_freezes_what_the_command_made(monkeypatch: pytest.MonkeyPatch) -> None:
    """`cli.run` (the `miogen` command, `python -m miogen`) returns main's status and then freezes the objects left,
    so the interpreter's shutdown does not walk them: even when the command fails."""
    import gc

    from miogen import cli

    made: list[object] = []

    def command(fail: bool) -> int:
        made.extend([[i] for i in range(100)])  # what a command leaves behind
        if fail:
            raise KeyError("x")
        return 3

    for fail in (False, True):
        before = gc.get_freeze_count()
        monkeypatch.setattr(cli, "main", lambda f=fail: command(f))
        try:
            assert cli.run() == 3 and not fail
        except KeyError:
            assert fail
        assert gc.get_freeze_count() >= before + 100


def _inputs(tmp_path: Path) -> dict[str, Path]:
    """A copy of every kind of input a command reads: a header with its version.h, an include folder, a spec, the
    annotations, the target facts, a history folder and a source tree."""
    import shutil

    from ..helpers import FIXTURE_ANNOTATIONS, GOLDEN, SPECS

    d = tmp_path / "in"
    (d / "inc").mkdir(parents=True)
    (d / "src").mkdir()
    (d / "hist").mkdir()
    shutil.copy(FIXTURE_HEADER, d / "miopen.h")
    shutil.copy(FIXTURE_HEADER.parent / "version.h", d / "version.h")
    shutil.copy(GOLDEN / "fixture.spec.yaml", d / "hist" / "3.4.1.yaml")
    shutil.copy(FIXTURE_ANNOTATIONS, d / "annotations.yaml")
    shutil.copy(SPECS / "target.yaml", d / "target.yaml")
    (d / "src" / "conv.cpp").write_text("int f() { return 0; }\n")
    (d / "inc" / "extra.h").write_text("\n")
    return {"header": d / "miopen.h", "version.h": d / "version.h", "inc": d / "inc", "spec": d / "hist" / "3.4.1.yaml",
            "annotations": d / "annotations.yaml", "target": d / "target.yaml", "hist": d / "hist", "src": d / "src",
            "src file": d / "src" / "conv.cpp", "folder": d}


_OVER_INPUTS: list[tuple[str, list[str], str]] = [
    # (what, the command with {input} placeholders, the input it would write over)
    ("parse -o HEADER", ["parse", "{header}", "-o", "{header}"], "header"),
    ("parse -o the target", ["parse", "{header}", "--target", "{target}", "-o", "{target}"], "target"),
    ("parse -o the version.h", ["parse", "{header}", "-o", "{version.h}"], "version.h"),
    ("parse -o a symlink to HEADER", ["parse", "{header}", "-o", "{link:header}"], "header"),
    ("parse -o a hard link of HEADER", ["parse", "{header}", "-o", "{hard:header}"], "header"),
    ("changes -o a spec", ["changes", "{spec}", "-o", "{spec}"], "spec"),
    ("changes -o a hard link of a spec", ["changes", "{spec}", "-o", "{hard:spec}"], "spec"),
    ("render -o the folder of its spec", ["render", "{spec}", "--annotations", "{annotations}", "--target",
                                          "{target}", "-o", "{hist}"], "spec"),
    ("render -o a folder holding its annotations", ["render", "{spec}", "--annotations", "{annotations}",
                                                    "--target", "{target}", "-o", "{folder}"], "spec"),
    ("render -o the history", ["render", "{spec}", "--annotations", "{annotations}", "--target", "{target}",
                               "--history", "{src}", "-o", "{src}"], "src"),
    ("audit -o its spec", ["audit", "{src}", "--spec", "{spec}", "--annotations", "{annotations}", "-o",
                           "{spec}"], "spec"),
    ("audit -o a file of its source tree", ["audit", "{src}", "--spec", "{spec}", "--annotations",
                                            "{annotations}", "-o", "{src file}"], "src"),
    ("abi-check --keep the header's folder", ["abi-check", "{header}", "--keep", "{folder}"], "header"),
]


@pytest.mark.parametrize("what,command,victim", _OVER_INPUTS, ids=[c[0] for c in _OVER_INPUTS])
def test_no_command_writes_over_its_own_inputs(tmp_path: Path, what: str, command: list[str], victim: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Every command with an output refuses one that is (or, for a folder, holds) one of its inputs: by path, a
    symlink or a hard link; the error names both; every input is left as it was."""
    import os

    from miogen.cli import main

    paths = _inputs(tmp_path)
    words = []
    for word in command:
        if word.startswith("{link:"):
            link = tmp_path / "link"
            link.symlink_to(paths[word[6:-1]])
            word = str(link)
        elif word.startswith("{hard:"):
            link = tmp_path / "hard"
            os.link(paths[word[6:-1]], link)
            word = str(link)
        elif word.startswith("{"):
            word = str(paths[word[1:-1]])
        words.append(word)
    before = {p: p.read_bytes() for p in (tmp_path / "in").rglob("*") if p.is_file()}
    assert main(words) == 2, what
    err = capsys.readouterr().err
    assert "refusing to write over an input" in err and str(paths[victim]) in err, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert {p: p.read_bytes() for p in (tmp_path / "in").rglob("*") if p.is_file()} == before


def test_paths_are_any_bytes_the_os_allows(tmp_path: Path) -> None:
    """A folder named with bytes that are not UTF-8 works for the header, -I, -o and the spec of every command,
    and messages show such a path escaped (no UnicodeDecodeError or UnicodeEncodeError, no traceback)."""
    import os
    import shutil

    from ..helpers import FIXTURE_ANNOTATIONS

    folder = os.path.join(os.fsencode(tmp_path), b"x\xff")
    os.mkdir(folder)
    d = os.fsdecode(folder)
    for name in ("miopen.h", "version.h"):
        shutil.copy(FIXTURE_HEADER.parent / name, os.path.join(d, name))
    r = _run("parse", os.path.join(d, "miopen.h"), "--beta", "-I", d, "-o", d + "/")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    spec = os.path.join(d, "3.4.1.yaml")
    assert load(Path(spec)) == fixture_spec()
    r = _run("check", spec)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    r = _run("render", spec, "--annotations", str(FIXTURE_ANNOTATIONS), "-o", os.path.join(d, "pkg"))
    assert r.returncode == 0 and "Traceback" not in r.stderr and os.path.isdir(os.path.join(d, "pkg")), r.stderr
    r = _run("parse", os.path.join(d, "miopen.h"), "-o", os.path.join(d, "miopen.h"))
    assert r.returncode == 2 and "Traceback" not in r.stderr and "x\\xff" in r.stderr, r.stderr
