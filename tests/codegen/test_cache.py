"""The per-user cache (codegen/base/cache.py and its users): every key covers what its output depends on, nothing is
loaded from a folder or file others may write, and a damaged entry is a miss that is written again. And the compiled
templates the package ships (codegen/render/jinja_env.py): used only for the very template, settings and Python."""

from __future__ import annotations

import os
import sys
import shutil
import stat
import subprocess
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
    monkeypatch.setattr(jinja_env, "SHIPPED", tmp_path / "in" / "none shipped")  # the copies have none compiled
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


def _ship(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The copied templates compiled as a build ships them (`compile_shipped`), into a package of their own that
    renders then use."""
    package = tmp_path / "package"
    files = jinja_env.compile_shipped(package)
    monkeypatch.setattr(jinja_env, "SHIPPED", package.joinpath(*jinja_env.SHIPPED_IN_PACKAGE))
    return files


def _templates_stored(root: Path) -> list[Path]:
    return [p for p in _entries(root) if _kind(p, root) == "template"] if root.exists() else []


def test_shipped_templates_are_used_with_the_cache_empty_or_off(tmp_path: Path, inputs: dict[str, Path],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Every template compiled into the package (one file each): a render with the per-user cache empty or off
    compiles none and stores none, and renders the bytes of a render with none shipped."""
    expected = _render(inputs, tmp_path / "none", "", monkeypatch)
    files = _ship(tmp_path, monkeypatch)
    assert len(files) == len(list(inputs["templates"].rglob("*.j2")))
    work = _Work(monkeypatch)
    for cache_dir in (str(tmp_path / "cold"), ""):
        assert _render(inputs, tmp_path / f"out{len(cache_dir)}", cache_dir, monkeypatch) == expected
        assert work.take()["template"] == 0, cache_dir
    assert _templates_stored(tmp_path / "cold") == []


def test_shipped_templates_are_the_same_bytes_wherever_built(tmp_path: Path) -> None:
    """A build (a process of its own) is deterministic: two builds in other folders with other hash seeds write the
    same files, byte for byte."""
    code = "import sys; from pathlib import Path; from miogen.render import jinja_env; " \
           "jinja_env.compile_shipped(Path(sys.argv[1]))"
    contents = []
    for seed in ("1", "2"):
        root = tmp_path / f"build {seed}"
        r = subprocess.run([sys.executable, "-c", code, str(root)], env={**os.environ, "PYTHONHASHSEED": seed},
                           capture_output=True, text=True, check=False)
        assert r.returncode == 0, r.stderr
        contents.append({p.name: p.read_bytes() for p in root.joinpath(*jinja_env.SHIPPED_IN_PACKAGE).iterdir()})
    assert contents[0] and contents[0] == contents[1]


def test_a_template_changed_since_it_was_shipped_is_compiled(tmp_path: Path, inputs: dict[str, Path],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A template edited after the package was built (as in the editable install) is compiled from its source,
    never taken from its stale shipped code: its change is in the output, and it alone is compiled (and kept
    in the per-user cache); the others still come from the package."""
    _ship(tmp_path, monkeypatch)
    _append(inputs["templates"] / "api.py.j2", "# a changed template\n")
    _append(inputs["templates"] / "release" / "raw.py.j2", "# a changed release template\n")
    work = _Work(monkeypatch)
    got = _render(inputs, tmp_path / "out", str(tmp_path / "cold"), monkeypatch)
    assert got["api.py"].endswith(b"# a changed template\n")
    assert next(v for k, v in got.items() if k.endswith("/raw.py")).endswith(b"# a changed release template\n")
    assert work.take()["template"] == 2
    assert len(_templates_stored(tmp_path / "cold")) == 2
    assert got == _render(inputs, tmp_path / "off", "", monkeypatch)


def _another_python(path: Path) -> None:
    """The file as a Python of another version would have written it (Jinja's header names the version)."""
    import pickle

    data = path.read_bytes()
    here = pickle.dumps((sys.version_info[0] << 24) | sys.version_info[1], 2)
    other = pickle.dumps((sys.version_info[0] << 24) | (sys.version_info[1] + 1), 2)
    head = jinja2.bccache.bc_magic
    assert data.startswith(head) and head.endswith(here)
    path.write_bytes(head[: -len(here)] + other + data[len(head):])


@pytest.mark.parametrize("change", ["Jinja's version", "compile settings", "the filters", "another Python",
                                    "truncated", "empty"])
def test_shipped_templates_of_another_environment_are_not_used(tmp_path: Path, inputs: dict[str, Path],
                                                              monkeypatch: pytest.MonkeyPatch, change: str) -> None:
    """Shipped code compiled for another Jinja, other compile settings, other filters (a filter of a constant runs
    when a template is compiled) or another Python, or a file cut short: every template is compiled, and the
    output is that of a render with none shipped."""
    files = _ship(tmp_path, monkeypatch)
    if change == "Jinja's version":
        monkeypatch.setattr(jinja2, "__version__", jinja2.__version__ + ".post1")
    elif change == "compile settings":
        monkeypatch.setattr(jinja_env, "OPTIONS", {**jinja_env.OPTIONS, "keep_trailing_newline": False})
    elif change == "the filters":
        monkeypatch.setattr(jinja_env, "_definition", lambda: "other filters")
    else:
        for path in files:
            if change == "another Python":
                _another_python(path)
            else:
                path.write_bytes(path.read_bytes()[: 40] if change == "truncated" else b"")
    work = _Work(monkeypatch)
    got = _render(inputs, tmp_path / "out", str(tmp_path / "cold"), monkeypatch)
    assert work.take()["template"] == len(_templates_stored(tmp_path / "cold")) > 0
    monkeypatch.setattr(jinja_env, "SHIPPED", tmp_path / "none shipped")
    assert got == _render(inputs, tmp_path / "none", "", monkeypatch)


def test_the_installed_package_ships_its_compiled_templates() -> None:
    """The package this suite imports (the editable install of `make venv`: its link tree) ships every template
    compiled from its current source, so a render with the per-user cache empty compiles none."""
    env = jinja_env._plain()
    settings = jinja_env.settings(env)
    for name in env.list_templates(extensions=["j2"]):
        bucket = jinja2.bccache.Bucket(env, name, jinja2.BytecodeCache().get_source_checksum(
            (jinja_env.TEMPLATES / name).read_text(encoding="utf-8")))
        path = jinja_env.SHIPPED / jinja_env.shipped_name(name, settings)
        assert path.is_file(), f"{name}: not shipped (make venv builds the link tree with it)"
        bucket.bytecode_from_string(path.read_bytes())
        assert bucket.code is not None, f"{name}: shipped, but of another source (make venv compiles it again)"
