"""A bounded, seeded fuzz over what miogen reads: mutations of the real specs, annotations and the
fixture header. Every outcome must be a clean error (a CodegenError with a bounded message) or a
valid result (a spec that loads, resolves and renders, or a parsed spec that round-trips). Any
other exception, a hang or a crash fails. Mutated specs and targets that render also go through the
multi-release renderer, g++ (stubs) and a subprocess that imports and binds them: no payload may
run. The counts are printed at the end (and recorded as properties of the test).

MIOGEN_FUZZ_SCALE multiplies the cases, MIOGEN_FUZZ_SEED changes them, MIOGEN_FUZZ_DEBUG=1 prints
each clean error."""

from __future__ import annotations

import collections
import functools
import os
import random
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from miogen.base.record import replace
from miogen.spec import model
from miogen.semantics.annotations import load_annotations
from miogen.semantics.resolve import resolve
from miogen.base.errors import CodegenError
from miogen.parse.headers import ParseOptions
from miogen.parse.parser import parse_header
from miogen.render.package import render
from miogen.spec.spec_io import dumps, load, loads
from miogen.spec.releases import Version

from ..helpers import FIXTURE_ANNOTATIONS, FIXTURE_HEADER, planned, SPECS, target

SEED = int(os.environ.get("MIOGEN_FUZZ_SEED", "20261123"))
SPEC_CASES = int(os.environ.get("MIOGEN_FUZZ_SCALE", "1")) * 120
ANNOTATION_CASES = int(os.environ.get("MIOGEN_FUZZ_SCALE", "1")) * 100
HEADER_CASES = int(os.environ.get("MIOGEN_FUZZ_SCALE", "1")) * 12
RENDERED = 6  # valid spec mutants also rendered (and compiled)
MAX_MESSAGE = 20_000

COUNTS: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)

NASTY_VALUES: list[Any] = [
    None, True, False, 0, -1, 2**70, 1.5, float("inf"), "", "x" * 3000, "__class__", "_fields_", "mro", "None",
    "lambda", "s", "010", "1e309", "-1", "nullptr", "3.0", "3.0.0", "0.0.0", "٣.٠.٠", "ｍiopen", "a\0b", "a\u202eb",
    'x"; __import__("os").system("true"); "', 'x"""\nimport os\n"""', "x\nimport os #", "miogen_x", "int",
    "unsigned long long", "struct", [], {}, [1, 2], {"name": "x"}, {"kind": "int", "name": "int"}, "😀",
]
NASTY_NAMES = ["_fields_", "mro", "s", "fn", "raw", "lambda", "class_", "__init__", "miogen_s", "ctypes", "value",
               "name", "_missing_", "len_x", "st", "self", "Any", "NamedTuple"]
NASTY_DEFAULTS = ["010", "0x1p3f", "1e309", "-1", "'a'", "2", "1'000", "0b2", "-1u", "nullptr", "1.5", "true", "08"]


# ------------------------------------------------------------------ the driver


def _yaml(text: str) -> Any:
    return yaml.load(text, Loader=yaml.CSafeLoader)


def _dump(data: Any, allow_unicode: bool = False) -> str:
    text: str = yaml.dump(data, Dumper=yaml.CSafeDumper, sort_keys=False, allow_unicode=allow_unicode)
    return text


def _run(kind: str, case: int, what: str, fn: Callable[[], str]) -> None:
    """Run one case; record `valid` or a clean error; anything else fails naming the case."""
    t0 = time.perf_counter()
    try:
        fn()
    except CodegenError as exc:
        message = str(exc)
        assert message and len(message) <= MAX_MESSAGE, f"{kind} case {case} ({what}): unbounded message"
        COUNTS[kind]["clean errors"] += 1
        if os.environ.get("MIOGEN_FUZZ_DEBUG"):
            print(kind, case, what, message[:600].replace("\n", " | "))
        COUNTS[kind][f"error:{type(exc).__name__}"] += 1
    except Exception:  # noqa: BLE001 - the point of the test
        pytest.fail(f"{kind} case {case} (seed {SEED}, {what}) raised something other than a clean error:\n"
                    f"{traceback.format_exc()}")
    else:
        COUNTS[kind]["valid results"] += 1
    COUNTS[kind]["cases"] += 1
    elapsed = time.perf_counter() - t0
    assert elapsed < 20, f"{kind} case {case} ({what}) took {elapsed:.1f} s"


def _paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(data, dict):
        for k, v in data.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += _paths(v, (*prefix, i))
    return out


def _get(data: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        data = data[p]
    return data


def _mutate_data(data: Any, rng: random.Random) -> tuple[Any, str]:
    """One structural mutation of YAML data: replace a value, delete or rename a key, duplicate or
    drop a list item."""
    paths = _paths(data)
    path = rng.choice(paths[1:])
    parent, last = _get(data, path[:-1]), path[-1]
    op = rng.randrange(5)
    if op == 0 or not isinstance(parent, (dict, list)):
        value = rng.choice(NASTY_VALUES)
        parent[last] = value
        return data, f"{path}={str(value)[:30]!r}"
    if op == 1 and isinstance(parent, dict):
        del parent[last]
        return data, f"del {path}"
    if op == 2 and isinstance(parent, dict):
        parent[rng.choice(NASTY_NAMES)] = parent.pop(last)
        return data, f"rename {path}"
    if op == 3 and isinstance(parent, list):
        parent.insert(last, parent[last])
        return data, f"dup {path}"
    if isinstance(parent, list):
        del parent[last]
        return data, f"drop {path}"
    parent[last] = rng.choice(NASTY_NAMES)
    return data, f"{path}=name"


def _mutate_text(text: str, rng: random.Random) -> tuple[str, str]:
    """One textual mutation: duplicate or delete a line, truncate, flip a byte, or splice in YAML
    that attacks the loader (aliases, tags, deep nesting, merge keys)."""
    lines = text.split("\n")
    op = rng.randrange(7)
    i = rng.randrange(len(lines))
    if op == 0:
        lines.insert(i, lines[i])
        return "\n".join(lines), f"dup line {i}"
    if op == 1:
        del lines[i]
        return "\n".join(lines), f"del line {i}"
    if op == 2:
        cut = rng.randrange(len(text))
        return text[:cut], f"truncate {cut}"
    if op == 3:
        pos = rng.randrange(len(text))
        return text[:pos] + chr(rng.randrange(1, 0x3000)) + text[pos + 1:], f"flip {pos}"
    attacks = ["&a [1, 2]", "*a", "!!python/object:os.system [x]", "[" * 200 + "]" * 200, "{<<: {a: 1}}",
               "!!binary AAAA", "!!timestamp 2001-13-99", "? [a]\n: b", "'\\ud800'", "\"\\ud83d\\ude00\""]
    attack = rng.choice(attacks)
    line = lines[i]
    head = line.split(":", 1)[0] if ":" in line else line
    lines[i] = f"{head}: {attack}"
    return "\n".join(lines), f"attack line {i}: {attack[:20]}"


# ------------------------------------------------------------------ specs


@functools.cache
def _small_spec() -> model.Spec:
    """A real spec (2.15.0) cut to a few functions and the types they use (so mutants load fast)."""
    spec = load(SPECS / "2.15.0.yaml")
    functions = spec.functions[:10]
    used: set[str] = set()

    def use(t: model.CType) -> None:
        used.add(t.name)

    for f in functions:
        use(f.returns)
        for p in f.params:
            use(p.type)
    records = tuple(r for r in spec.records if r.name in used or r.typedef in used)
    for r in records:
        for fld in r.fields:
            if fld.type is not None:
                use(fld.type)
    status = "miopenStatus_t"
    return replace(
        spec, functions=functions, records=records,
        enums=tuple(e for e in spec.enums if e.name in used or e.name == status),
        handles=tuple(h for h in spec.handles if h.name in used),
        callbacks=tuple(c for c in spec.callbacks if c.name in used),
        typedefs=tuple(t for t in spec.typedefs if t.name in used),
    )


def test_fuzz_specs() -> None:
    rng = random.Random(SEED)
    base = _small_spec()
    text = dumps(base)
    data = _yaml(text)
    ann = load_annotations(SPECS / "annotations.yaml")
    rendered = 0
    for case in range(SPEC_CASES):
        if rng.random() < 0.5:
            mutated_data, what = _mutate_data(_yaml(text), rng)
            mutated = _dump(mutated_data, allow_unicode=rng.random() < 0.5)
        else:
            mutated, what = _mutate_text(text, rng)

        def attempt() -> str:
            nonlocal rendered
            spec = loads(mutated, f"fuzz-{case}.yaml")
            resolve(spec, ann, strict=False, prefix="miopen", target=target())
            if rendered < RENDERED:  # render (and compile) a few of the valid ones
                render(planned(spec, ann, target(), "# fuzz", strict=False))
                rendered += 1
            return "valid"

        _run("specs", case, what, attempt)
    assert data  # the base itself is valid
    COUNTS["specs"]["rendered"] = rendered


# ------------------------------------------------------------------ annotations


@pytest.mark.long
def test_fuzz_annotations(tmp_path: Path) -> None:
    rng = random.Random(SEED + 1)
    text = (SPECS / "annotations.yaml").read_text()
    spec = _small_spec()
    path = tmp_path / "annotations.yaml"
    for case in range(ANNOTATION_CASES):
        if rng.random() < 0.5:
            mutated_data, what = _mutate_data(_yaml(text), rng)
            mutated = _dump(mutated_data)
        else:
            mutated, what = _mutate_text(text, rng)
        path.write_text(mutated, encoding="utf-8", errors="surrogatepass")

        def attempt() -> str:
            ann = load_annotations(path)
            resolve(spec, ann, strict=False, prefix="miopen", target=target())  # on a cut spec most are stale
            return "valid"

        _run("annotations", case, what, attempt)


# ------------------------------------------------------------------ headers


def _mutate_header(text: str, rng: random.Random) -> tuple[str, str]:
    lines = text.split("\n")
    decls = [i for i, line in enumerate(lines) if line.strip().startswith(("miopenStatus_t miopen", "MIOPEN_EXPORT"))]
    op = rng.randrange(6)
    if op == 0:  # a parameter or field renamed to a name the generated code uses
        i = rng.choice([i for i, line in enumerate(lines) if line.strip().endswith((",", ";")) and " " in line.strip()])
        words = lines[i].rstrip(",;) ").split()
        if words:
            old = words[-1].strip("*&")
            new = rng.choice(NASTY_NAMES)
            lines[i] = lines[i].replace(old, new, 1)
            return "\n".join(lines), f"rename {old} -> {new} on line {i + 1}"
    if op == 1 and decls:  # a default argument on the last parameter of a declaration
        i = rng.choice(decls)
        end = next(j for j in range(i, len(lines)) if ");" in lines[j])
        default = rng.choice(NASTY_DEFAULTS)
        lines[end] = lines[end].replace(");", f" = {default});", 1)
        return "\n".join(lines), f"default {default} on line {end + 1}"
    if op == 2:
        i = rng.randrange(len(lines))
        del lines[i]
        return "\n".join(lines), f"del line {i + 1}"
    if op == 3:
        cut = rng.randrange(len(text))
        return text[:cut], f"truncate {cut}"
    if op == 4:
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
        return "\n".join(lines), f"dup line {i + 1}"
    pos = rng.randrange(len(text))
    return text[:pos] + rng.choice(["\0", "\xff", "@", "}", "#define miopenStatus_t int\n"]) + text[pos:], f"byte {pos}"


def test_fuzz_headers(tmp_path: Path) -> None:
    rng = random.Random(SEED + 2)
    text = FIXTURE_HEADER.read_text()
    ann = load_annotations(FIXTURE_ANNOTATIONS)
    include = tmp_path / "include" / "miopen"
    include.mkdir(parents=True)
    header = include / "miopen.h"
    for case in range(HEADER_CASES):
        mutated, what = _mutate_header(text, rng)
        header.write_text(mutated, encoding="utf-8", errors="surrogateescape")

        def attempt() -> str:
            spec = parse_header(header, target(), ParseOptions(), "3.4.1")
            again = loads(dumps(spec), "round-trip")  # what the parser makes always loads back
            assert again == spec
            resolve(spec, ann, strict=False, prefix="miopen", target=target())
            return "valid"

        _run("headers", case, what, attempt)


def _fuzz_counts(capsys: pytest.CaptureFixture[str], record_property: Callable[[str, object], None]) -> None:
    """Print (and record) what the fuzz saw: cases, clean errors, valid results per input kind."""
    lines = []
    for kind in ("specs", "annotations", "headers", "render"):
        c = COUNTS.get(kind)
        if not c:
            continue
        kinds = ", ".join(f"{k[6:]} {n}" for k, n in sorted(c.items()) if k.startswith("error:"))
        lines.append(f"fuzz {kind}: {c['cases']} cases, {c['clean errors']} clean errors ({kinds}), "
                     f"{c['valid results']} valid results" + (f" ({c['rendered']} rendered)" if c["rendered"] else "")
                     + (f"; {c['imported']} packages imported in a subprocess ({c['modules imported']} release "
                        f"modules), {c['bound to a stub']} bound to a g++-built stub" if kind == "render" else ""))
        record_property(f"fuzz_{kind}", dict(c))
    with capsys.disabled():
        print("\n" + "\n".join(lines))


# ------------------------------------------------------------------ render, compile, import


RENDER_CASES = int(os.environ.get("MIOGEN_FUZZ_SCALE", "1")) * 24
STUBS = 3  # of those, also given a g++-built stub library and bound to it


def _payloads(marker: Path) -> list[str]:
    touch = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    return [f'x"; {touch}; "', f"x'; {touch}; '", f'x"""\n{touch}\n"""', f"x'''{touch}'''", f"{{{touch}}}",
            f"x\\\" + {touch} + \"", f"x\n{touch}\n#", "trailing\\", "ｍiopen ᴍɪᴏᴘᴇɴ 😀"]


SAFE_NAMES = ["s", "fn", "raw", "st", "ret", "e", "self", "cls", "type", "len", "lambda", "Any", "Thing", "len_x",
              "_fn", "_st", "value", "name", "count", "index", "ctypes", "handle", "Handle", "stateStep", "state_step"]
FUNCTION_NAMES = ["miopenRaw", "miopenErrors", "miopenVersion", "miopenHip", "miopenApi", "miopenSupport",
                  "miopenGetRNNX", "miopenGetRnnX", "miopenAny", "miopenBoundRelease", "miopenLoadLibrary"]


def _mutate_gently(data: dict[str, Any], rng: random.Random, payloads: list[str]) -> str:
    """A mutation that often leaves the spec valid, so that rendering and importing get exercised:
    names the generated code uses itself, free text holding a payload, extreme enum values."""
    op = rng.randrange(5)
    functions = [f for f in data["functions"] if f.get("params")]
    if op == 0:
        data["release"] = rng.choice(payloads)
        return "release=payload"
    if op == 1 and functions:
        f = rng.choice(functions)
        p = rng.choice(f["params"])
        p["name"] = rng.choice(SAFE_NAMES)
        return f"{f['name']}.param={p['name']}"
    if op == 2:
        f = rng.choice(data["functions"])
        f["name"] = rng.choice(FUNCTION_NAMES)
        return f"function={f['name']}"
    if op == 3:
        e = rng.choice(data["enums"])
        c = rng.choice(e["constants"])
        c["value"] = rng.choice([0, 1, 2**31 - 1, 2**32 - 1, -1, 2**31])
        return f"{e['name']}.{c['name']}={c['value']}"
    f = dict(rng.choice(data["functions"]))
    f["name"] = rng.choice(FUNCTION_NAMES)
    data["functions"].append(f)
    return f"copy as {f['name']}"


def _mutate_target(data: dict[str, Any], rng: random.Random, payloads: list[str]) -> str:
    """A free-text field of the target (or another one) set to a payload."""
    key = rng.choice(["error_suffix", "status_hints", "library_roots", "display_name", "library_env",
                      "find_library_name", "skip_version_check_env", "error_suffix"])
    value = rng.choice(payloads)
    if key == "status_hints":
        data[key] = {rng.choice(sorted(data[key])): value}
    elif key == "library_roots":
        data[key] = [value]
    else:
        data[key] = value
    return f"target.{key}"


@pytest.mark.long
def test_fuzz_render_compile_import(tmp_path: Path) -> None:
    """Mutated specs and targets (payloads that try to break out of every literal) go through the
    multi-release renderer beside a second release; what renders is written, some get a g++-built
    stub, and one subprocess (bounded) imports every package and each release's modules, binds those
    with a stub, and checks that no payload ran (the marker file never appears)."""
    import json
    import subprocess
    import sys

    from miogen.prove import cxx, stublib
    from miogen.base.files import write_tree as write
    from miogen.render.package import banner
    from miogen.spec.target import load_target

    rng = random.Random(SEED + 3)
    marker = tmp_path / "PWNED"
    payloads = _payloads(marker)
    base = _small_spec()
    other = replace(base, version=Version(2, 16, 0))
    text = dumps(base)
    target_data = _yaml((SPECS / "target.yaml").read_text())
    ann = load_annotations(SPECS / "annotations.yaml")
    packages: list[tuple[str, str | None]] = []
    attempts = 0
    while len(packages) < RENDER_CASES and attempts < RENDER_CASES * 25:
        attempts += 1
        if rng.random() < 0.65:
            mutated_data = _yaml(text)
            what = "; ".join(_mutate_gently(mutated_data, rng, payloads) for _ in range(rng.randrange(1, 4)))
        else:
            mutated_data, what = _mutate_data(_yaml(text), rng)
        if rng.random() < 0.2:  # a payload where a nasty value would go
            path = rng.choice(_paths(mutated_data)[1:])
            parent = _get(mutated_data, path[:-1])
            if isinstance(parent, (dict, list)):
                parent[path[-1]] = rng.choice(payloads)
                what += f"; {path}=payload"
        tdata = _yaml(_dump(target_data))
        if rng.random() < 0.7:
            what += "; " + _mutate_target(tdata, rng, payloads)
        tpath = tmp_path / f"target{attempts}.yaml"
        tpath.write_text(_dump(tdata, allow_unicode=True), encoding="utf-8")
        name = f"fz{len(packages)}"
        stub: list[str] = []

        def attempt() -> str:
            spec = loads(_dump(mutated_data, allow_unicode=rng.random() < 0.5), f"fuzz-render-{attempts}.yaml")
            tgt = load_target(tpath)
            files = render(planned(spec, ann, tgt, banner(rng.choice(payloads), "0" * 64, "1" * 64), strict=False),
                           planned(other, ann, tgt, banner("other.yaml", "0" * 64, "1" * 64), strict=False))
            write(files, tmp_path / name)
            if len([p for p in packages if p[1]]) < STUBS:
                header = tmp_path / f"{name}.h"
                header.write_text(stublib.header_source(spec, rng.choice(payloads)))
                sem = resolve(spec, ann, strict=False, prefix="miopen", target=tgt)
                lib = cxx.compile_cpp(stublib.stub_source(spec, sem, header, rng.choice(payloads), tgt.status_type,
                                                      tgt.version_getter), tmp_path / f"lib{name}.so", tgt, shared=True)
                stub.append(str(lib))
            return "valid"

        before = COUNTS["render"]["valid results"]
        _run("render", attempts, what, attempt)
        if COUNTS["render"]["valid results"] > before:
            packages.append((name, stub[0] if stub else None))
        assert not marker.exists(), f"a payload ran while rendering ({what})"
    probe = f"""
import importlib, json, sys
sys.path.insert(0, {str(tmp_path)!r})
out = {{"imported": 0, "modules": 0, "bound": 0, "failures": []}}
for name, lib in {packages!r}:
    try:
        pkg = importlib.import_module(name)
        for module in pkg._support._MODULES.values():
            for part in ("raw", "api"):
                importlib.import_module(f"{{name}}.{{module}}.{{part}}")
                out["modules"] += 1
        out["imported"] += 1
        if lib:
            pkg._support.set_version_policy("off")
            pkg._support.load_library(lib)
            out["bound"] += bool(pkg._support.bound_release()) and bool(pkg._support.bound_all())
    except Exception as exc:
        out["failures"].append(f"{{name}}: {{type(exc).__name__}}: {{exc}}"[:500])
print(json.dumps(out))
"""
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]  # a crash of the importing process fails here
    report = json.loads(res.stdout.strip().splitlines()[-1])
    assert not report["failures"], report["failures"][:5]
    assert not marker.exists(), "a payload ran at import"
    assert report["imported"] == len(packages) and report["bound"] == sum(1 for p in packages if p[1])
    COUNTS["render"]["imported"] = report["imported"]
    COUNTS["render"]["modules imported"] = report["modules"]
    COUNTS["render"]["bound to a stub"] = report["bound"]
    assert len(packages) >= RENDER_CASES // 2, f"only {len(packages)} of {attempts} mutants rendered"


def test_fuzz_counts(capsys: pytest.CaptureFixture[str], record_property: Callable[[str, object], None]) -> None:
    """Print (and record) what the fuzz saw: cases, clean errors, valid results per input kind."""
    _fuzz_counts(capsys, record_property)
