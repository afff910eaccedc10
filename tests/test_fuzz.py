"""A bounded, seeded fuzz over what miogen reads: mutations of the real specs, annotations and the
fixture header. Every outcome must be a clean error (a CodegenError with a bounded message) or a
valid result (a spec that loads, resolves and renders, or a parsed spec that round-trips). Any
other exception, a hang or a crash fails. The counts are printed at the end (and recorded as
properties of the test)."""

from __future__ import annotations

import collections
import functools
import os
import random
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from codegen import model
from codegen.annotate import load_annotations, resolve
from codegen.errors import CodegenError
from codegen.parser import ParseOptions, parse_header
from codegen.render import plan, render
from codegen.spec_io import dumps, load, loads

from .helpers import FIXTURE_ANNOTATIONS, FIXTURE_HEADER, SPECS, target

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
                render(plan(spec, ann, target(), "# fuzz", strict=False))
                rendered += 1
            return "valid"

        _run("specs", case, what, attempt)
    assert data  # the base itself is valid
    COUNTS["specs"]["rendered"] = rendered


# ------------------------------------------------------------------ annotations


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


def test_fuzz_counts(capsys: pytest.CaptureFixture[str], record_property: Callable[[str, object], None]) -> None:
    """Print (and record) what the fuzz saw: cases, clean errors, valid results per input kind."""
    lines = []
    for kind in ("specs", "annotations", "headers"):
        c = COUNTS.get(kind)
        if not c:
            continue
        kinds = ", ".join(f"{k[6:]} {n}" for k, n in sorted(c.items()) if k.startswith("error:"))
        lines.append(f"fuzz {kind}: {c['cases']} cases, {c['clean errors']} clean errors ({kinds}), "
                     f"{c['valid results']} valid results" + (f" ({c['rendered']} rendered)" if c["rendered"] else ""))
        record_property(f"fuzz_{kind}", dict(c))
    with capsys.disabled():
        print("\n" + "\n".join(lines))
