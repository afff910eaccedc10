"""The committed specs of the real releases hold what the real headers declare."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from miogen.spec import model
from miogen.spec.records import load_records
from miogen.spec.releases import Releases, Version
from miogen.spec.spec_io import load

from ...helpers import SPECS


@functools.cache
def spec(version: str) -> model.Spec:
    return load(SPECS / f"{version}.yaml")


# every committed release, the ones `make upgrade` adds included
RELEASES = [str(v) for v in Releases.of(SPECS).versions]
RECORDS = load_records(SPECS)


@pytest.mark.parametrize("version", RELEASES)
def test_the_record_agrees_with_the_spec(version: str) -> None:
    """Every committed release has its record (releases.yaml), and the ABI check it records was of this spec's
    functions: as many called through as the spec declares (beta API included)."""
    s = spec(version)
    record = RECORDS[Version.parse(version)]
    assert record.header and record.shipped_in == (s.release or "")
    called = re.search(r"(\d+) functions called through, 0 failing", record.abi)
    assert called and int(called.group(1)) == len(s.functions), (record.abi, len(s.functions))
    assert str(s.version) == version and s.parse.beta
    assert len(s.header.sha256) == 64


@pytest.mark.parametrize("version", RELEASES)
def test_invariants(version: str) -> None:
    s = spec(version)
    assert all(f.name.startswith("miopen") for f in s.functions)
    returns = {f.name: f.returns for f in s.functions}
    assert returns.pop("miopenGetErrorString") == model.CType(kind="char", name="char", depth=1, const=(True, False))
    assert set(returns.values()) == {model.CType(kind="enum", name="miopenStatus_t")}
    perf = s.record("miopenConvAlgoPerf_t")
    assert (perf.size, perf.align, perf.fields[0].name, perf.fields[0].offset) == (16, 8, None, 0)
    assert [f.name for f in perf.fields[0].record.fields] == ["fwd_algo", "bwd_weights_algo", "bwd_data_algo"]  # type: ignore[union-attr]
    sol = s.record("miopenConvSolution_t")
    assert (sol.size, [f.offset for f in sol.fields]) == (32, [0, 8, 16, 24])
    assert [c.name for c in s.callbacks] == ["miopenAllocatorFunction", "miopenDeallocatorFunction"]
    # nothing became int by accident: every size_t stayed size_t
    ver = s.function("miopenGetVersion")
    assert [p.type.name for p in ver.params] == ["size_t"] * 3
    # every pointer parameter has a proposed role
    for f in s.functions:
        for p in f.params:
            assert (p.role is not None) == (p.type.depth > 0 or p.type.kind == "callback"), (f.name, p.name)


def test_tensor_argument_struct_and_renumbering() -> None:
    assert "miopenTensorArgument_t" not in {r.name for r in spec("2.15.0").records}
    for v in (r for r in RELEASES if Version.parse(r) >= Version(2, 20, 0)):
        arg = spec(v).record("miopenTensorArgument_t")
        assert (arg.typedef, arg.size) == (None, 24)
    ids = {c.name: c.value for c in spec("3.3.0").enum("miopenTensorArgumentId_t").constants}
    assert ids["miopenTensorArgumentIsScalar"] == 2**31
    assert spec("3.3.0").enum("miopenTensorArgumentId_t").underlying == "unsigned int"


def test_alias_and_moves_in_352() -> None:
    s = spec("3.5.2")
    for v in (r for r in RELEASES if Version.parse(r) >= Version(3, 4, 0)):  # the find-mode enum (and its alias)
        find = {c.name: c for c in spec(v).enum("miopenConvolutionFindMode_t").constants}
        assert find["miopenConvolutionFindModeDefault"].alias_of == "miopenConvolutionFindModeDynamicHybrid"
    assert "miopenConvolutionFindMode_t" not in {e.name for e in spec("3.3.0").enums}
    assert not s.enum("miopenAlphaBetaCase_t").beta
    assert spec("3.3.0").enum("miopenAlphaBetaCase_t").beta
    assert "miopenBackendDescriptor_t" not in {h.name for h in s.handles}
    assert len(s.handles) == 20


def test_beta_constants_inside_stable_enums() -> None:
    dt = {c.name: c for c in spec("3.3.0").enum("miopenDataType_t").constants}
    assert dt["miopenFloat8"].beta and dt["miopenBFloat8"].beta and not dt["miopenFloat"].beta
    assert not spec("3.3.0").enum("miopenDataType_t").beta


def test_default_arguments_since_330() -> None:
    kth = {p.name: p.default for p in spec("3.3.0").function("miopenKthvalueForward").params}
    assert (kth["dim"], kth["keepDim"]) == ("-1", "false")


def test_no_comment_syntax_in_specs() -> None:
    """Committed specs hold names, types, values and flags, and the header's words without its comment syntax (no
    comment marker or Doxygen command survives into `brief` or `doc`)."""
    for path in sorted(Path(SPECS).glob("*.*.*.yaml")):
        text = path.read_text()
        assert "/*" not in text and "*/" not in text and "@param" not in text and "@brief" not in text, path


def test_the_header_words_are_carried() -> None:
    """Every release whose spec carries the header's words has a brief for most functions and the text of most
    parameters, each one line (the 2.17.0 header documents nearly everything)."""
    s = spec("2.17.0")
    briefs = [f.brief for f in s.functions if f.brief]
    docs = [p.doc for f in s.functions for p in f.params if p.doc]
    assert len(briefs) > 0.9 * len(s.functions)
    assert len(docs) > 0.8 * sum(len(f.params) for f in s.functions)
    assert all("\n" not in t and t == t.strip() and "  " not in t for t in [*briefs, *docs])
    fwd = s.function("miopenConvolutionForward")
    assert fwd.brief and "forward convolution" in fwd.brief
    assert {p.name: p.doc for p in fwd.params}["handle"] == "MIOpen handle (input)"


def _real_headers() -> dict[str, Path]:
    """Real miopen.h files found under $MIOGEN_HEADERS (default /tmp/miopen-headers), by sha256.

    Headers are never committed; where none are present these tests skip (the fixture header's
    golden spec still pins the parser's output)."""
    import hashlib
    import os

    root = Path(os.environ.get("MIOGEN_HEADERS", "/tmp/miopen-headers"))
    found: dict[str, Path] = {}
    if root.is_dir():
        for h in [*root.glob("*/miopen.h"), *root.glob("*/miopen/miopen.h")]:
            found.setdefault(hashlib.sha256(h.read_bytes()).hexdigest(), h)
    return found


@pytest.mark.parametrize("preamble", [True, False], ids=["preamble", "no-preamble"])
@pytest.mark.parametrize("version", RELEASES)
def test_reparse_is_byte_identical(version: str, preamble: bool, tmp_path: Path) -> None:
    """Parsing the real header again gives the committed spec byte for byte (the parser's speed-ups
    must not change a single line), with the precompiled preamble (codegen/parse/preamble.py) and without it. The header
    is parsed from a copy of its own: one header may be two releases' (2.15.0's and 2.16.0's are the same bytes), and
    the version.h found beside it would name only one."""
    from miogen.parse.headers import ParseOptions
    from miogen.parse.parser import parse_header
    from miogen.spec.spec_io import dumps

    from ...helpers import target

    committed = (SPECS / f"{version}.yaml").read_text(encoding="utf-8")
    header = _real_headers().get(spec(version).header.sha256)
    if header is None:
        pytest.skip(f"the real {version} miopen.h is not under $MIOGEN_HEADERS")
    alone = tmp_path / header.name
    alone.write_bytes(header.read_bytes())
    s = parse_header(alone, target(), ParseOptions(beta=True, preamble=preamble), version, spec(version).release)
    assert dumps(s) == committed
