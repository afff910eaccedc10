"""The per-user cache (codegen/base/cache.py and its users): every key covers what its output depends on, nothing is
loaded from a folder or file others may write, and a damaged entry is a miss that is written again."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import jinja2
import pytest

from miogen.base import cache
from miogen.render import jinja_env, package as render
from miogen.spec import spec_io
from miogen.semantics.annotations import load_annotations
from miogen.spec.target import load_target

from ..helpers import FIXTURE_ANNOTATIONS, GOLDEN


@pytest.fixture
def inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Path]]:
    """Private copies of every input of a render: the spec, the annotations, the templates, the support modules."""
    paths = {"spec": tmp_path / "in" / "fixture.yaml", "annotations": tmp_path / "in" / "annotations.yaml",
             "templates": tmp_path / "in" / "templates", "support": tmp_path / "in" / "support"}
    paths["spec"].parent.mkdir()
    shutil.copy(GOLDEN / "fixture.spec.yaml", paths["spec"])
    shutil.copy(FIXTURE_ANNOTATIONS, paths["annotations"])
    shutil.copytree(jinja_env.TEMPLATES, paths["templates"])
    shutil.copytree(render.SUPPORT, paths["support"], ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(jinja_env, "TEMPLATES", paths["templates"])
    monkeypatch.setattr(render, "SUPPORT", paths["support"])
    monkeypatch.setattr(cache, "_FINGERPRINT", [])
    yield paths


def _render(inputs: dict[str, Path], out: Path, cache_dir: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    monkeypatch.setenv("MIOGEN_CACHE_DIR", cache_dir)
    files = render.generate([inputs["spec"]], inputs["annotations"], load_target(), out, None)
    return {str(p.relative_to(out)): p.read_bytes() for p in files}


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def test_every_input_is_in_the_key(tmp_path: Path, inputs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Changed one at a time (template text, Jinja options, support modules, annotations, spec, generator
    version), each input changes the output, and a warm cache (which has seen every earlier state) renders the
    same bytes as a cold one and as none."""

    def options() -> None:
        monkeypatch.setattr(jinja_env, "OPTIONS", {**jinja_env.OPTIONS, "keep_trailing_newline": False})

    def version() -> None:
        monkeypatch.setattr(render, "GENERATOR_VERSION", "99.0.0")
        monkeypatch.setattr(cache, "GENERATOR_VERSION", "99.0.0")
        monkeypatch.setattr(cache, "_FINGERPRINT", [])

    changes: list[tuple[str, Callable[[], None]]] = [
        ("template text", lambda: _append(inputs["templates"] / "api.py.j2", "# a changed template\n")),
        ("Jinja options", options),
        ("support module", lambda: _append(inputs["support"] / "_text.py", "# a changed support module\n")),
        ("annotations", lambda: _append(inputs["annotations"], "# a changed annotation file\n")),
        ("spec", lambda: _append(inputs["spec"], "# a changed spec\n")),
        ("generator version", version),
    ]
    warm = str(tmp_path / "warm")
    before = _render(inputs, tmp_path / "first", warm, monkeypatch)
    for n, (what, change) in enumerate(changes):
        change()
        got = _render(inputs, tmp_path / f"warm{n}", warm, monkeypatch)
        assert got != before, f"{what}: changed nothing"
        assert got == _render(inputs, tmp_path / f"off{n}", "", monkeypatch), what
        assert got == _render(inputs, tmp_path / f"cold{n}", str(tmp_path / f"cold{n}-cache"), monkeypatch), what
        before = got


def _entries(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))


class _Work:
    """Counts what a render had to do again: plans made, templates compiled, texts compiled."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.counts = {"plan": 0, "template": 0, "syntax": 0}
        real_plan, real_compile = render.plan, jinja2.Environment.compile

        def plan(*args: object, **kwargs: object) -> object:
            self.counts["plan"] += 1
            return real_plan(*args, **kwargs)  # type: ignore[arg-type]

        def compile_template(env: jinja2.Environment, *args: object, **kwargs: object) -> object:
            self.counts["template"] += 1
            return real_compile(env, *args, **kwargs)  # type: ignore[arg-type]

        def compile_text(text: str, name: str, mode: str) -> object:
            self.counts["syntax"] += 1
            return compile(text, name, mode)

        monkeypatch.setattr(render, "plan", plan)
        monkeypatch.setattr(jinja2.Environment, "compile", compile_template)
        monkeypatch.setattr(render, "compile", compile_text, raising=False)

    def take(self) -> dict[str, int]:
        out = dict(self.counts)
        self.counts.update(dict.fromkeys(self.counts, 0))
        return out


def _kind(entry: Path, root: Path) -> str:
    folder = entry.relative_to(root).parts[0]
    return "template" if folder.startswith("templates-") else "syntax" if folder.startswith("syntax-") else "plan"


def test_a_cache_others_may_write_is_never_loaded(tmp_path: Path, inputs: dict[str, Path],
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capfd: pytest.CaptureFixture[str]) -> None:
    """Under umask 000 the cache's folders are made 0700 and its files 0600. A folder (the root too) or file made
    writable by others, or (as root) owned by another user, is not loaded: one warning names it, the work is done
    again, and the output is the same."""
    root = tmp_path / "cache"
    old = os.umask(0)
    try:
        expected = _render(inputs, tmp_path / "first", str(root), monkeypatch)
    finally:
        os.umask(old)
    folders = [root, *(p for p in root.rglob("*") if p.is_dir())]
    assert {stat.S_IMODE(p.stat().st_mode) for p in folders} == {0o700}
    assert {stat.S_IMODE(p.stat().st_mode) for p in root.rglob("*") if p.is_file()} == {0o600}
    work = _Work(monkeypatch)
    assert _render(inputs, tmp_path / "warm", str(root), monkeypatch) == expected
    assert work.take() == {"plan": 0, "template": 0, "syntax": 0}
    capfd.readouterr()
    spoilers: list[Callable[[Path], None]] = [lambda p: p.chmod(stat.S_IMODE(p.stat().st_mode) | 0o002),
                                              lambda p: p.chmod(stat.S_IMODE(p.stat().st_mode) | 0o020)]
    if os.geteuid() == 0:
        spoilers.append(lambda p: os.chown(p, 54321, -1))
    entry = next(p for p in _entries(root) if _kind(p, root) == "template")
    for spoil in spoilers:
        for target in (root, entry.parent, entry):
            mode, uid = target.stat().st_mode, target.stat().st_uid
            spoil(target)
            monkeypatch.setattr(cache, "_WARNED", set())
            assert _render(inputs, tmp_path / "again", str(root), monkeypatch) == expected
            redone = work.take()
            assert redone["template"] > 0, target
            err = capfd.readouterr().err
            assert err.count("warning") == 1 and str(target) in err, err
            os.chown(target, uid, -1)
            target.chmod(stat.S_IMODE(mode))


def _damages(entry: Path, other: bytes) -> Iterator[tuple[str, bytes]]:
    data = entry.read_bytes()
    yield "truncated", data[: len(data) // 2]
    yield "empty", b""
    yield "garbled", data[:-1] + bytes([data[-1] ^ 0xFF])
    yield "garbled head", bytes([data[0] ^ 0xFF]) + data[1:]
    yield "another kind's entry", other


def test_a_damaged_entry_is_a_miss_that_is_written_again(tmp_path: Path, inputs: dict[str, Path],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Every entry of every kind (loaded specs, plans, compiled templates, syntax checks), truncated, emptied, garbled or replaced with an entry of another kind: the next render succeeds with
    the same output, and the entry is written again."""
    root = tmp_path / "cache"
    expected = _render(inputs, tmp_path / "first", str(root), monkeypatch)
    entries = _entries(root)
    kinds = {_kind(p, root) for p in entries}
    assert kinds == {"plan", "template", "syntax"}, kinds
    originals = {p: p.read_bytes() for p in entries}
    loaded = (spec_io.load(inputs["spec"]), load_annotations(inputs["annotations"]))
    for n, entry in enumerate(entries):
        other = next(data for p, data in originals.items() if _kind(p, root) != _kind(entry, root))
        for m, (how, damaged) in enumerate(_damages(entry, other)):
            entry.write_bytes(damaged)
            # a new directory: a file an earlier render left unchanged there is not compiled again
            assert _render(inputs, tmp_path / f"out{n}-{m}", str(root), monkeypatch) == expected, (entry, how)
            # what `miogen check --annotations` reads (a render that finds its plan reads neither)
            assert (spec_io.load(inputs["spec"]), load_annotations(inputs["annotations"])) == loaded, (entry, how)
            rewritten = entry.read_bytes()
            assert rewritten.startswith(cache.MAGIC) and rewritten != damaged, (entry, how)
    work = _Work(monkeypatch)  # every entry written again is a hit
    assert _render(inputs, tmp_path / "last", str(root), monkeypatch) == expected
    assert work.take() == {"plan": 0, "template": 0, "syntax": 0}
    assert _entries(root) == entries


def test_a_changed_file_that_does_not_compile_is_refused_over_earlier_output(
        tmp_path: Path, inputs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A render into the directory of an earlier one compiles only the files it changes, and a changed file that
    is not valid Python fails the render whether the cache is cold, warm or off: the directory stays as it was."""
    from miogen.base.errors import CodegenError

    out = tmp_path / "out"
    warm = str(tmp_path / "warm")
    before = _render(inputs, out, warm, monkeypatch)
    work = _Work(monkeypatch)
    assert _render(inputs, out, str(tmp_path / "cold"), monkeypatch) == before
    assert work.take()["syntax"] == 0  # every file as the earlier render left it
    _append(inputs["templates"] / "release" / "raw.py.j2", "def (:\n")
    for cache_dir in (str(tmp_path / "cold-again"), warm, ""):
        with pytest.raises(CodegenError, match=r"raw\.py is not valid Python"):
            _render(inputs, out, cache_dir, monkeypatch)
        assert work.take()["syntax"] >= 1
        assert {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()
                and p.name != ".miogen-output" and "__pycache__" not in p.parts} == before
