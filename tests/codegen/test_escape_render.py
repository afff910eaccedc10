"""Strings from specs, targets and callers reach the generated code of the multi-release renderer
only through codegen/base/escape.py: crafted text renders inert (nothing runs at render or import, it
reads back verbatim) or is refused cleanly with its YAML path; C++ outputs (stub, probe, header)
keep such text inside comments and string literals, and refuse what they cannot spell."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from miogen.base.record import replace
from miogen.prove import cxx, layout, stublib
from miogen.spec import validate
from miogen.semantics.annotations import load_annotations
from miogen.semantics.resolve import resolve
from miogen.base.errors import CodegenError
from miogen.spec.model import Spec
from miogen.base.files import write_tree as write
from miogen.render.package import banner, render
from miogen.spec.target import Target
from miogen.spec.releases import Version

from ..helpers import FIXTURE_ANNOTATIONS, FIXTURE_HEADER, fixture_spec, planned, target


def _touch(marker: Path) -> str:
    return f"__import__('pathlib').Path({str(marker)!r}).touch()"


def _printable_payloads(marker: Path) -> list[str]:
    """Text the validators allow (printable), crafted to break out of every kind of literal."""
    touch = _touch(marker)
    return [
        f'x"; {touch}; "',
        f"x'; {touch}; '",
        f'x"""; {touch}; """',
        f"x'''; {touch}; '''",
        f"{{{touch}}} {{{{{touch}}}}}",  # f-string braces
        f"x\\\\\" + {touch} + \"",  # backslashes before a quote
        "trailing backslash\\",
        "ｍiopen — look-alikes ᴍɪᴏᴘᴇɴ ＿ ﹍ 😀",
        f"# {touch}",
        "*/ /* ?? ??/ \\",  # C comment ends, trigraphs
    ]


def _raw_payloads(marker: Path) -> list[str]:
    """Anything at all: what a caller could pass past the validators (line breaks of every kind)."""
    touch = _touch(marker)
    return [*_printable_payloads(marker), f"x\n{touch}\n#", f"x\r{touch}\r#", f"x\u2028{touch}", f"x\x0c{touch}",
            f"x\0{touch}", "\ud800 lone surrogate", "\u00a0nbsp \u202e bidi", f"x\\\n{touch}"]


def _two_releases(spec: Spec) -> tuple[Spec, Spec]:
    """The fixture spec as two releases (3.4.1 and a 3.5.0 copy), so the multi-release layout is rendered."""
    return spec, replace(spec, version=Version(3, 5, 0))


def _import_and_report(root: Path, pkg: str, probe: str) -> dict[str, object]:
    code = f"import json, sys\nsys.path.insert(0, {str(root)!r})\nimport {pkg}\nout = {{}}\n{probe}\nprint(json.dumps(out))\n"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    report: dict[str, object] = json.loads(res.stdout.strip().splitlines()[-1])
    return report


@pytest.mark.long
def test_free_text_of_target_spec_and_caller_renders_inert_in_every_release(tmp_path: Path) -> None:
    """Printable payloads in every free-text field of the target (error suffix, status hints, install
    roots), in the banner (spec file name), and in added-in versions (a caller's dict): two releases
    rendered, imported, the texts read back verbatim, no marker file."""
    marker = tmp_path / "PWNED"
    ann = load_annotations(FIXTURE_ANNOTATIONS)
    payloads = _printable_payloads(marker)
    for i, text in enumerate(payloads):
        tgt = replace(target(), error_suffix=text, status_hints={"miopenStatusNotImplemented": text},
                      library_roots=(text, "/opt/rocm"))
        old, new = _two_releases(fixture_spec())
        added = {"miopenCatForward": text}
        files = render(planned(old, ann, tgt, banner(f"{text}.yaml", "0" * 64, "1" * 64), added),
                       planned(new, ann, tgt, banner(f"new{text}.yaml", "0" * 64, "1" * 64), added))
        assert {"v3_4_1/api.py", "v3_5_0/api.py", "_support.py", "errors.py"} <= set(files)
        assert not marker.exists()
        write(files, tmp_path / f"pkg{i}")
        report = _import_and_report(tmp_path, f"pkg{i}", """
import importlib
e = sys.modules[next(iter(sys.modules.keys() & {m for m in sys.modules if m.endswith('.errors')}))]
try:
    e.raise_status(6, 'f', {})
except Exception as exc:
    out['error'] = str(exc)
s = importlib.import_module(e.__name__.rpartition('.')[0] + '._support')
out['roots'] = [c for _, c in s._candidates()]
for v in ('v3_4_1', 'v3_5_0'):
    api = importlib.import_module(e.__name__.rpartition('.')[0] + '.' + v + '.api')
    out[v] = api.cat_forward.__doc__
out['added'] = importlib.import_module(e.__name__.rpartition('.')[0] + '._releases').ADDED_IN['miopenCatForward']
""")
        assert str(report["error"]).count(text) == 2, report["error"]  # the hint and the suffix, verbatim
        assert any(str(c).startswith(text + "/lib") for c in report["roots"])  # type: ignore[attr-defined]
        assert text in str(report["v3_4_1"]) and text in str(report["v3_5_0"])
        assert report["added"] == text
        assert not marker.exists(), text
        banner_line = files["v3_4_1/api.py"].splitlines()[0]
        assert banner_line.startswith("# Generated by miogen ") and "\n" not in banner_line


@pytest.mark.long
def test_escaping_alone_keeps_literals_inert(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the validators switched off, anything in a field the templates paste as a string (display
    name, environment variable names, library names, version getter, spec file name, banners, added-in
    versions) still renders valid Python that runs nothing and reads back (defence in depth)."""
    marker = tmp_path / "PWNED"
    monkeypatch.setattr(validate, "ensure_valid", lambda obj: None)
    monkeypatch.setattr("miogen.spec.target.target_problems", lambda t: [])
    ann = load_annotations(FIXTURE_ANNOTATIONS)
    for i, text in enumerate(_raw_payloads(marker)):
        tgt = replace(target(), display_name=text, library_env=text, library_root_env=text + "R",
                      find_library_name=text, library_names=(text, "libMIOpen.so"), skip_version_check_env=text + "S",
                      error_suffix=text, status_hints={"miopenStatusBadParm": text}, library_roots=(text,))
        old, new = _two_releases(fixture_spec())
        files = render(planned(old, ann, tgt, f"# banner\n{text}\n# {text}", {"miopenCatForward": text}),
                       planned(new, ann, tgt, banner(text, text, text), {"miopenCatForward": text}))
        for name, body in files.items():
            assert body.isascii(), name  # every escape is ASCII
            for line in body.splitlines()[:3]:
                assert line.startswith("#") or not line.strip() or line.startswith('"""'), (name, line)
        write(files, tmp_path / f"raw{i}")
        report = _import_and_report(tmp_path, f"raw{i}", f"""
s = sys.modules['raw{i}._support']
out['env'] = s.LIBRARY_ENV
out['names'] = list(s.LIBRARY_NAMES)
out['skip'] = s.SKIP_VERSION_CHECK_ENV
try:
    s.load_library('/nonexistent/dir/lib.so')
except s.LibraryNotFoundError as exc:
    out['load'] = str(exc)
out['missing'] = s.missing_name('nothing')
out['doc'] = s.HandleBase.__doc__
import importlib
out['api_doc'] = importlib.import_module('raw{i}.v3_5_0.api').__doc__
""")
        assert report["env"] == text and report["names"] == [text, "libMIOpen.so"] and report["skip"] == text + "S"
        shown = "".join(f"\\u{ord(c):04x}" if "\ud800" <= c <= "\udfff" else c for c in text)  # docstrings: visible
        assert f"cannot load {shown} from /nonexistent" in str(report["load"])  # messages: visible too (_text.shown)
        assert f"in no {text} release" in str(report["missing"])
        assert f"opaque {shown} handle" in str(report["doc"])
        assert str(report["api_doc"]).startswith(f"The typed API of {shown} 3.5.0")
        assert not marker.exists(), text


@pytest.mark.parametrize(("field", "value", "path"), [
    ("display_name", 'MIOpen"; x()', "display_name"),
    ("library_env", "A\"+__import__('os').system('x')+\"", "library_env"),
    ("error_base", "Bad Error", "error_base"),
    ("error_suffix", "line\nbreak", "error_suffix"),
    ("status_hints", {"miopenStatusBadParm": "x\u202ey"}, r"status_hints\.miopenStatusBadParm"),
    ("skip_version_check_env", 'X"); import os; ("', "skip_version_check_env"),
    ("library_roots", ("/opt/\x00rocm",), r"library_roots\[0\]"),
])
def test_a_crafted_target_built_in_memory_is_refused_at_render(field: str, value: object, path: str,
                                                               tmp_path: Path) -> None:
    """A Target made in Python (not loaded from YAML) is checked by the same rules before rendering."""
    tgt: Target = replace(target(), **{field: value})  # type: ignore[arg-type]
    with pytest.raises(CodegenError, match=rf": {path}: "):
        planned(fixture_spec(), load_annotations(FIXTURE_ANNOTATIONS), tgt, "# crafted")


def test_crafted_annotation_reason_never_reaches_code(tmp_path: Path) -> None:
    """`why:` texts are documentation of the annotations: printable payloads load and render nothing of them."""
    marker = tmp_path / "PWNED"
    text = _printable_payloads(marker)[0]
    ann = load_annotations(FIXTURE_ANNOTATIONS)
    ann = replace(ann, functions={k: replace(v, why=text) for k, v in ann.functions.items()})
    assert ann.functions
    files = render(planned(fixture_spec(), ann, target(), "# why"))
    assert not any(text in body for body in files.values())
    assert not marker.exists()


# ------------------------------------------------------------------ C++ outputs


@pytest.fixture(scope="module")
def fixture_sem() -> Iterator[tuple[Spec, object]]:
    spec = fixture_spec()
    yield spec, resolve(spec, load_annotations(FIXTURE_ANNOTATIONS))


def test_cpp_banners_stay_comments(tmp_path: Path, fixture_sem: tuple[Spec, object]) -> None:
    """A banner that tries to end its // comment (newline, CR, backslash continuation) or to inject
    preprocessor lines stays a comment: the stub and the declarations header compile, the probe runs."""
    spec, sem = fixture_sem
    evil = "stub\n#error injected\r#error cr\\\n#error continued \u2028 */ ??/"
    src = stublib.stub_source(spec, sem, FIXTURE_HEADER, evil, target().status_type, target().version_getter)  # type: ignore[arg-type]
    assert "#error" not in "\n".join(line for line in src.splitlines() if not line.startswith("//"))
    cxx.compile_cpp(src, tmp_path / "libstub.so", target(), shared=True)
    header = tmp_path / "decl.h"
    header.write_text(stublib.header_source(spec, evil))
    assert all(line.startswith("//") for line in header.read_text().splitlines()[:4])
    probe = layout.probe_source(spec, header, evil)
    cxx.compile_cpp(probe, tmp_path / "probe", target(), shared=False)


@pytest.mark.parametrize("name", ['we"ird.h', "back\\slash.h", "new\nline.h", "tab\t.h"])
def test_cpp_include_of_an_unspellable_header_path_is_refused(tmp_path: Path, name: str,
                                                              fixture_sem: tuple[Spec, object]) -> None:
    spec, sem = fixture_sem
    with pytest.raises(CodegenError, match="cannot be #included"):
        stublib.stub_source(spec, sem, tmp_path / name, "stub", target().status_type)  # type: ignore[arg-type]
    with pytest.raises(CodegenError, match="cannot be #included"):
        layout.probe_source(spec, tmp_path / name, "probe")
