"""Shared fixtures: the fixture header, the target, a cached parse."""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path

import pytest

from miogen.spec import model
from miogen.parse.headers import ParseOptions
from miogen.parse.parser import parse_header
from miogen.spec.releases import PIN_FILE, Releases, Version
from miogen.spec.spec_io import dumps
from miogen.spec.target import Target, load_target
from miogen.render.planner import plan
from miogen.render.plans import Plan
from miogen.semantics.annotations import Annotations
from miogen.semantics.resolve import resolve

REPO = Path(__file__).resolve().parent.parent
FIXTURE_HEADER = REPO / "tests" / "fixtures" / "include" / "miopen" / "miopen.h"
FIXTURE_ANNOTATIONS = REPO / "tests" / "fixtures" / "annotations.yaml"
GOLDEN = REPO / "tests" / "golden"
SPECS = REPO / "specs" / "miopen"
#: the committed releases (specs/miopen: paths, the pinned one), the one home tests read them from
COMMITTED = Releases.of(SPECS)
UPDATE_GOLDEN = os.environ.get("MIOGEN_UPDATE_GOLDEN") == "1"


def planned(spec: model.Spec, ann: Annotations, tgt: Target, info: str, added: dict[str, str] | None = None, *,
            strict: bool = True) -> Plan:
    """The plans of `spec` under `ann`: resolved, then planned."""
    return plan(spec, resolve(spec, ann, strict=strict, prefix=tgt.function_prefix), tgt, info, added)


@functools.cache
def target() -> Target:
    return load_target()


@functools.cache
def fixture_spec(beta: bool = True) -> model.Spec:
    return parse_header(FIXTURE_HEADER, target(), ParseOptions(beta=beta))


def check_golden(name: str, text: str) -> None:
    """Compare `text` with tests/golden/<name> byte for byte; MIOGEN_UPDATE_GOLDEN=1 rewrites it."""
    path = GOLDEN / name
    if UPDATE_GOLDEN:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"missing golden {path}; run with MIOGEN_UPDATE_GOLDEN=1 and review the diff"
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        import difflib

        diff = "".join(
            list(difflib.unified_diff(expected.splitlines(True), text.splitlines(True), str(path), "rendered"))[:80]
        )
        pytest.fail(f"{path} differs (MIOGEN_UPDATE_GOLDEN=1 rewrites it; review the diff):\n{diff}")


def upgrade_specs_dir(tmp_path: Path, pinned: model.Spec) -> Path:
    """A spec directory for `miogen upgrade`: `pinned` committed and pinned, the fixture annotations."""
    d = tmp_path / "specs"
    d.mkdir()
    (d / f"{pinned.version}.yaml").write_text(dumps(pinned))
    (d / PIN_FILE).write_text(f"{pinned.version}\n")
    shutil.copy(REPO / "tests" / "fixtures" / "annotations.yaml", d / "annotations.yaml")
    return d


def release_header(tmp_path: Path, extra: str = "", version: str = "3.4.1") -> Path:
    """The fixture header with `extra` declarations, as release `version` (its version.h beside it)."""
    inc = tmp_path / "include" / "miopen"
    assert not inc.exists()
    inc.mkdir(parents=True)
    text = FIXTURE_HEADER.read_text().replace("#ifdef __cplusplus\n}\n#endif", extra + "\n#ifdef __cplusplus\n}\n#endif")
    (inc / "miopen.h").write_text(text)
    major, minor, patch = Version.parse(version)
    (inc / "version.h").write_text(f"#define MIOPEN_VERSION_MAJOR {major}\n#define MIOPEN_VERSION_MINOR {minor}\n"
                                   f"#define MIOPEN_VERSION_PATCH {patch}\n")
    return inc / "miopen.h"


def next_release_header(spec: model.Spec, directory: Path, version: str, extra: str) -> Path:
    """A miopen.h of release `version` (version.h beside it) declaring `spec`'s API plus the declarations
    `extra`: the spec's header re-synthesised (miogen.prove.stublib.header_source) with what the parser reads from
    doc comments (group, direction tags, deprecation), default arguments, beta functions under the
    beta macro and HIP's types from <hip/hip_runtime_api.h>."""
    import re

    from miogen.prove.stublib import header_source

    functions = {f.name: f for f in spec.functions}
    beta_macro = target().beta_macro

    def documented(m: re.Match[str]) -> str:
        f = functions[m.group(1)]
        tags = [f"@ingroup {f.group}"] if f.group else []
        tags += [f"@param[{'in,out' if p.doc_tag == 'inout' else p.doc_tag}] {p.name}"
                 + (" (optional)" if p.doc_optional else "") for p in f.params if p.doc_tag and p.name]
        tags += ["@deprecated"] if f.deprecated else []
        line = m.group(0)
        for p in f.params:
            if p.default is not None and p.name:
                line = re.sub(rf"\b{p.name}(?=[,)])", f"{p.name} = {p.default}", line)
        line = (f"/*! {' '.join(tags)} */\n" if tags else "") + line
        return f"#ifdef {beta_macro}\n{line}\n#endif" if f.beta else line

    text = header_source(spec, f"MIOpen {version} (synthetic: {spec.version} and more)")
    text = re.sub(r"^typedef struct (\w+)__opaque\* \1;$", "", text, flags=re.M)  # the real ones come from HIP
    text = text.replace("#pragma once\n", "#pragma once\n#include <hip/hip_runtime_api.h>\n", 1)
    text = re.sub(r"^.*\b(\w+)\(.*\);$", documented, text, flags=re.M)
    text = text.replace('extern "C" {\n', f'extern "C" {{\n{extra}\n', 1)
    inc = directory / "miopen"
    inc.mkdir(parents=True)
    (inc / "miopen.h").write_text(text)
    major, minor, patch = Version.parse(version)
    (inc / "version.h").write_text(f"#define MIOPEN_VERSION_MAJOR {major}\n#define MIOPEN_VERSION_MINOR {minor}\n"
                                   f"#define MIOPEN_VERSION_PATCH {patch}\n")
    return inc / "miopen.h"


#: the run's scratch folder for what every test process of one run can share (set by `make test`, else by
#: tests/conftest.py for one pytest run and its workers): compiled stub libraries, by content
CACHE_ENV = "MIOGEN_TEST_CACHE"


def _compiler_identity() -> str:
    gxx = shutil.which("g++") or "g++"
    real = os.path.realpath(gxx)
    return f"{real}:{os.stat(real).st_mtime_ns}" if os.path.exists(real) else gxx


def cached_header(text: str, name: str, fallback: Path) -> Path:
    """The header file `name` with `text`: written to `fallback` and, where the run has a cache, at a path of
    its content in the cache (what a cached compile includes, the same from every process)."""
    fallback.write_text(text)
    cache = os.environ.get(CACHE_ENV)
    if not cache:
        return fallback
    import hashlib

    path = Path(cache) / "headers" / hashlib.sha256(text.encode()).hexdigest()[:32] / name
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{name}.{os.getpid()}")
        tmp.write_text(text)
        os.replace(tmp, path)
    return path


def compile_stub(source: str, out: Path, tgt: Target, inputs: tuple[Path, ...] = ()) -> Path:
    """`cxx.compile_cpp(source, out, tgt, shared=True)`, compiled once per run: the run's cache (CACHE_ENV)
    keeps the library under the hash of its source, the files it includes (`inputs`: files or folders; the
    target's shims), the flags and the compiler, and `out` gets a copy of it (a file of its own: each dlopen
    of it is a library of its own, as a fresh compile's is)."""
    from miogen.prove import cxx

    cache = os.environ.get(CACHE_ENV)
    if not cache:
        return cxx.compile_cpp(source, out, tgt, shared=True)
    import fcntl
    import hashlib

    h = hashlib.sha256(source.encode())
    for top in (*inputs, tgt.shim_dir):
        for path in sorted(top.rglob("*")) if top.is_dir() else [top]:
            if path.is_file():
                h.update(b"\0" + str(path.relative_to(top.parent)).encode() + b"\0" + path.read_bytes())
    h.update(repr((tgt.default_defines, tgt.beta_macro, _compiler_identity())).encode())
    entry = Path(cache) / "stubs" / h.hexdigest()[:32]
    entry.mkdir(parents=True, exist_ok=True)
    lib = entry / "lib.so"
    with open(entry / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one process compiles; the others wait for its library
        if not lib.is_file():
            built = cxx.compile_cpp(source, entry / f"build-{os.getpid()}.so", tgt, shared=True)
            os.replace(built, lib)
    out.with_suffix(".cpp").write_text(source, encoding="utf-8")
    shutil.copy2(lib, out)
    return out
