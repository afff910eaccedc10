"""The fixture header -> spec: golden file, and each construct of miopen.h captured exactly."""

from __future__ import annotations

from pathlib import Path

from miogen.spec import model
from miogen.parse.headers import ParseOptions
from miogen.parse.parser import parse_header
from miogen.spec.spec_io import dumps, loads
from miogen.spec.releases import Version

from ..helpers import check_golden, fixture_spec, release_header, target


def test_golden_beta() -> None:
    check_golden("fixture.spec.yaml", dumps(fixture_spec(True)))


def test_golden_stable() -> None:
    check_golden("fixture.nobeta.spec.yaml", dumps(fixture_spec(False)))


def test_version_from_version_h() -> None:
    # version.h beside the header says 3.04.1: normalised, TWEAK ignored
    assert fixture_spec().version == Version(3, 4, 1)
    assert fixture_spec().release is None


def test_counts_and_beta_flags() -> None:
    beta, stable = fixture_spec(True), fixture_spec(False)
    assert len(beta.functions) == 47
    assert len(stable.functions) == 43
    assert {f.name for f in beta.functions if f.beta} == {
        "miopenCatForward", "miopenKthvalueForward", "miopenSoftMarginLossForward", "miopenGetitemCount",
    }
    assert not any(f.beta for f in stable.functions)
    assert beta.enum("miopenAlphaBetaCase_t").beta
    assert "miopenAlphaBetaCase_t" not in {e.name for e in stable.enums}
    dt = beta.enum("miopenDataType_t")
    assert not dt.beta
    assert [(c.name, c.beta) for c in dt.constants if c.beta] == [("miopenFloat8", True), ("miopenBFloat8", True)]
    assert [c.name for c in stable.enum("miopenDataType_t").constants] == [
        "miopenHalf", "miopenFloat", "miopenInt32", "miopenInt8", "miopenBFloat16", "miopenDouble", "miopenInt64",
    ]


def test_enum_values_gaps_aliases_and_big_values() -> None:
    s = fixture_spec()
    assert [c.value for c in s.enum("miopenConvFwdAlgorithm_t").constants] == [0, 1, 2, 3, 5]
    find = {c.name: c for c in s.enum("miopenConvolutionFindMode_t").constants}
    assert find["miopenConvolutionFindModeNormal"].value == 1
    assert find["miopenConvolutionFindModeDefault"].value == 5
    assert find["miopenConvolutionFindModeDefault"].alias_of == "miopenConvolutionFindModeDynamicHybrid"
    assert find["miopenConvolutionFindModeDynamicHybrid"].alias_of is None
    arg = {c.name: c for c in s.enum("miopenTensorArgumentId_t").constants}
    assert arg["miopenTensorArgumentIsScalar"].value == 2**31
    assert arg["miopenScalarFirst"].value == 2**31 + 1
    assert arg["miopenScalarBetaOnly"].value == 2**31 + 2 and arg["miopenScalarBetaOnly"].beta
    assert s.enum("miopenTensorArgumentId_t").underlying == "unsigned int"
    assert [c.name for c in s.enum("miopenAlphaBetaCase_t").constants] == ["DEFAULT", "SCALE", "BILINEAR", "ERROR_STATE"]


def test_deprecation_from_doc_text() -> None:
    s = fixture_spec()
    modes = {c.name: c.deprecated for c in s.enum("miopenConvolutionMode_t").constants}
    assert modes == {"miopenConvolution": False, "miopenTranspose": False, "miopenGroupConv": True, "miopenDepthwise": True}
    # the member comment sits on the value's line, after the comma
    assert [c.deprecated for c in s.enum("miopenConvBwdDataAlgorithm_t").constants] == [False, False, True]
    assert s.function("miopenConvolutionBackwardBias").deprecated
    assert [f.name for f in s.functions if f.deprecated] == ["miopenConvolutionBackwardBias"]


#: enum constants with their comments in every place clang attaches one (inside the braces, before or after the
#: constant; on the line a constant ends, even after the `};`; merged with the line comments below it) or the
#: parser reads one (a plain comment after the comma), and enums followed by declarations whose comments say
#: "deprecated" (no constant's business)
DEPRECATIONS = """
typedef enum {
    dA, /* deprecated here too: a plain comment after the comma */
    dB  ///< a trailing doc comment
} dEnum1_t; ///< deprecated after the typedef
enum dEnum2 { dC, dD }; ///< deprecated after the braces
enum dEnum3 { dE, dF }; ///< trailing
                        ///< Deprecated on the line below
enum dEnum4 {
    /** @deprecated */
    dG,
    dH = dG, /*!< DEPRECATED */
    dI /**< a block comment
            running on: deprecated */
};
/** deprecated: the next declaration's comment */
enum dEnum5 { dJ, dK };
enum dEnum6 { dL /* not it */ };
/** @deprecated the enum itself */
enum dEnum7 { dM };
"""


def test_deprecated_constants_are_clangs_comments(tmp_path: Path) -> None:
    """The class: a constant is deprecated exactly where its comment as clang attaches it (else a comment right
    after it and its comma) has the word, wherever that comment sits; checked against cindex's own answers."""
    from miogen.parse import doc
    from miogen.parse.builder import Builder
    from miogen.parse.clang_env import cindex
    from miogen.parse.headers import clang_args
    from miogen.parse.unit import top_level, translation_unit

    header = release_header(tmp_path, DEPRECATIONS)
    spec = parse_header(header, target(), ParseOptions())
    tu = translation_unit(header, clang_args(ParseOptions(), target(), False), target())
    trailing = Builder(header, header.read_text(), target())._trailing_comment
    expected = {e.spelling: doc.is_deprecated(e.raw_comment or trailing(e.extent.end.offset), member=True)
                for c in top_level(tu, header) if c.kind == cindex().CursorKind.ENUM_DECL
                for e in c.get_children() if e.spelling.startswith("d")}
    got = {c.name: c.deprecated for e in spec.enums for c in e.constants if c.name in expected}
    assert got == expected
    assert {name for name, deprecated in got.items() if deprecated} == {"dA", "dC", "dD", "dE", "dF", "dG", "dH", "dI"}


def test_records_layout() -> None:
    s = fixture_spec()
    perf = s.record("miopenConvAlgoPerf_t")
    assert (perf.size, perf.align, perf.tag, perf.typedef) == (16, 8, None, "miopenConvAlgoPerf_t")
    union = perf.fields[0]
    assert union.name is None and union.offset == 0 and union.record is not None
    assert union.record.kind == "union" and union.record.size == 4
    assert [(f.name, f.offset) for f in union.record.fields] == [("fwd_algo", 0), ("bwd_data_algo", 0)]
    assert [(f.name, f.offset) for f in perf.fields[1:]] == [("time", 4), ("memory", 8)]
    sol = s.record("miopenConvSolution_t")
    assert (sol.size, [f.offset for f in sol.fields]) == (32, [0, 8, 16, 24])
    assert sol.fields[2].type == model.CType(kind="int", name="uint64_t")
    arg = s.record("miopenTensorArgument_t")
    assert (arg.tag, arg.typedef, arg.size) == ("miopenTensorArgument_t", None, 24)
    assert arg.fields[1].type == model.CType(kind="handle", name="miopenTensorDescriptor_t", depth=1, const=(False, False))


def test_handles_callbacks_typedefs() -> None:
    s = fixture_spec()
    assert [(h.name, h.tag, h.group) for h in s.handles] == [
        ("miopenHandle_t", "miopenHandle", "handle"),
        ("miopenTensorDescriptor_t", "miopenTensorDescriptor", "tensor"),
        ("miopenConvolutionDescriptor_t", "miopenConvolutionDescriptor", "convolutions"),
        ("miopenDropoutDescriptor_t", "miopenDropoutDescriptor", "misc"),
        ("miopenActivationDescriptor_t", "miopenActivationDescriptor", "misc"),
    ]
    alloc, dealloc = s.callbacks
    assert alloc.name == "miopenAllocatorFunction"
    assert alloc.returns == model.CType(kind="void", name="void", depth=1, const=(False, False))
    assert [(p.name, p.type.name) for p in alloc.params] == [("context", "void"), ("sizeBytes", "size_t")]
    assert dealloc.returns == model.CType(kind="void", name="void")
    assert [t.name for t in s.typedefs] == ["miopenAcceleratorQueue_t"]
    assert s.typedefs[0].type == model.CType(kind="opaque", name="hipStream_t")


def _param(fn: str, name: str) -> model.Param:
    for p in fixture_spec().function(fn).params:
        if p.name == name:
            return p
    raise KeyError(name)


def test_types_are_never_silently_int() -> None:
    """bool, size_t, fixed-width ints and friends keep their names."""
    assert _param("miopenEnableProfiling", "enable").type == model.CType(kind="bool", name="bool")
    assert _param("miopenGetVersion", "major").type.name == "size_t"
    assert _param("miopenConvolutionForwardCompileSolution", "solution_id").type == model.CType(
        kind="int", name="uint64_t", const=(True,)
    )
    assert _param("miopenSetDropoutDescriptor", "seed").type.name == "unsigned long long"
    assert _param("miopenSetDropoutDescriptor", "use_mask").type == model.CType(kind="bool", name="bool", const=(True,))
    assert _param("miopenSetScalars", "p").type.name == "long"
    assert _param("miopenSetScalars", "margin").type == model.CType(kind="float", name="double")
    assert _param("miopenBatchNormalizationForwardInference", "spatialDim").type.name == "unsigned int"
    assert _param("miopenGetitemCount", "dimCount").type.name == "uint32_t"
    assert _param("miopenGetitemCount", "total").type.name == "int64_t"
    assert _param("miopenCreateWithStream", "stream").type == model.CType(kind="opaque", name="miopenAcceleratorQueue_t")
    assert fixture_spec().function("miopenGetErrorString").returns == model.CType(
        kind="char", name="char", depth=1, const=(True, False)
    )


def test_pointer_levels_and_constness() -> None:
    xs = _param("miopenCatForward", "xs")
    assert (xs.c, xs.type) == ("const void *const *", model.CType(kind="void", name="void", depth=2, const=(True, True, False)))
    states = _param("miopenGetDropoutDescriptor", "states")
    assert states.type == model.CType(kind="void", name="void", depth=2, const=(False, False, False))
    descs = _param("miopenCatForward", "xDescs")
    assert descs.type == model.CType(kind="handle", name="miopenTensorDescriptor_t", depth=1, const=(True, False))
    top = _param("miopenGetTensorNumBytes", "tensorDesc")
    assert top.type == model.CType(kind="handle", name="miopenTensorDescriptor_t", const=(True,))
    tensors = _param("miopenRunSolution", "tensors")
    assert tensors.type == model.CType(kind="struct", name="miopenTensorArgument_t", depth=1, const=(True, False))


def test_default_arguments() -> None:
    assert _param("miopenKthvalueForward", "dim").default == "-1"
    assert _param("miopenKthvalueForward", "keepDim").default == "false"
    assert _param("miopenSoftMarginLossForward", "workspace").default == "nullptr"
    assert _param("miopenSoftMarginLossForward", "workspaceSizeInBytes").default == "0"
    assert _param("miopenKthvalueForward", "k").default is None


def test_every_doc_tag_variant() -> None:
    cases = {
        ("miopenGetVersion", "major"): ("in" if False else "out", False),  # (output)
        ("miopenGetVersion", "minor"): ("out", False),  # (Output)
        ("miopenGetVersion", "patch"): ("out", True),  # (output, optional)
        ("miopenSetAllocator", "allocatorContext"): ("in", True),  # (input, optional)
        ("miopenSetStream", "streamID"): ("in", False),  # (inputs)
        ("miopenSet4dTensorDescriptor", "tensorDesc"): ("inout", False),  # (input/output)
        ("miopenSetNdTensorDescriptorWithLayout", "tensorDesc"): ("inout", False),  # (input / output)
        ("miopenSetTensorDescriptor", "tensorDesc"): ("inout", False),  # (input and output)
        ("miopenInitConvolutionNdDescriptor", "convDesc"): ("inout", False),  # (input/Output)
        ("miopenBatchNormalizationForwardInference", "spatialDim"): ("in", False),  # (input placeholder, ...)
        ("miopenGetDropoutDescriptor", "rng_mode"): ("out", False),  # (Output placeholder, ...)
        ("miopenSetScalars", "margin"): ("in", False),  # (intput)
        ("miopenCatForward", "xs"): ("in", False),  # @param [in]
        ("miopenCatForward", "y"): ("out", False),  # @param [out]
        ("miopenGetitemCount", "total"): ("out", False),  # [out] with a paren tag too
    }
    for (fn, name), (tag, optional) in cases.items():
        p = _param(fn, name)
        assert (p.doc_tag, p.doc_optional) == (tag, optional), (fn, name)
    assert _param("miopenDebugScratch", "buffer").doc_tag is None
    assert all(p.doc_tag is None for p in fixture_spec().function("miopenUndocumented").params)


def test_roles_type_first_doc_as_tie_breaker() -> None:
    def role(fn: str, name: str) -> tuple[str, str, str, str, str, str]:
        r = _param(fn, name).role
        assert r is not None
        return (r.direction, r.memory, r.shape, r.source.direction, r.source.memory, r.source.shape)

    assert role("miopenConvolutionForward", "x") == ("in", "device", "buffer", "type", "type", "type")
    assert role("miopenConvolutionForward", "y") == ("out", "device", "buffer", "doc", "type", "type")
    assert role("miopenConvolutionForward", "alpha") == ("in", "host", "scalar", "type", "name", "name")
    # BatchNorm's host scalars are non-const void *: the name rule still finds them
    assert role("miopenBatchNormalizationForwardInference", "alpha") == ("in", "host", "scalar", "name", "name", "name")
    # the doc says "input" but the type is a non-const typed pointer: the type wins
    assert role("miopenFindConvolutionForwardAlgorithm", "perfResults")[:1] == ("out",)
    assert role("miopenGetVersion", "major") == ("out", "host", "scalar", "type", "type", "type")
    assert role("miopenSetTensorDescriptor", "dimsA") == ("in", "host", "array", "type", "type", "type")
    assert role("miopenCatForward", "xs") == ("in", "host", "array", "type", "type", "type")
    assert role("miopenGetDropoutDescriptor", "states") == ("out", "host", "scalar", "type", "type", "type")
    assert role("miopenSetAllocator", "allocator") == ("in", "host", "callback", "type", "type", "type")
    # neither the type nor a doc tag says: left for an annotation
    assert role("miopenDebugScratch", "buffer") == ("unknown", "device", "buffer", "none", "type", "type")
    assert _param("miopenSetTensor", "yDesc").role is None  # handles by value have no role
    assert _param("miopenSet4dTensorDescriptor", "n").role is None


def test_groups() -> None:
    s = fixture_spec()
    groups = {f.name: f.group for f in s.functions}
    assert groups["miopenCreate"] == "handle"
    assert groups["miopenSetTensor"] == "tensor"
    assert groups["miopenConvolutionForward"] == "convolutions"
    assert groups["miopenCatForward"] == "misc"
    assert groups["miopenDebugScratch"] is None  # after every group closed
    assert s.enum("miopenStatus_t").group == "handle"


def test_round_trip_byte_for_byte() -> None:
    for beta in (True, False):
        text = dumps(fixture_spec(beta))
        again = loads(text)
        assert again == fixture_spec(beta)
        assert dumps(again) == text


def test_enum_aliases_every_spelling(tmp_path: Path) -> None:
    """`A = B` (three tokens; B may be a macro spelling B) names B; any other initializer (a comment among
    its tokens, arithmetic, parentheses, a function-like macro) names the first constant of the value;
    values keep their sign."""
    header = release_header(tmp_path, """
#define NAMES_X2 x2
#define SAME(x) x
typedef enum { x0 = -2, x1 = 1, x2 = 1, x3 = x2, x4 = /* c */ x2, x5 = // c
    x2, x6 = NAMES_X2, x7 = (x2), x8 = SAME(x2), x9 = x2 + 0, x10 = 3, x11, x12 = x0 } xEnum_t;
typedef enum : unsigned long long { bigA = 0xFFFFFFFFFFFFFFFFull, bigB = bigA } bigEnum_t;
""")
    spec = parse_header(header, target(), ParseOptions(beta=True))
    got = [(c.name, c.value, c.alias_of) for c in spec.enum("xEnum_t").constants]
    assert got == [
        ("x0", -2, None), ("x1", 1, None), ("x2", 1, "x1"), ("x3", 1, "x2"), ("x4", 1, "x1"), ("x5", 1, "x1"),
        ("x6", 1, "x2"), ("x7", 1, "x1"), ("x8", 1, "x1"), ("x9", 1, "x1"), ("x10", 3, None), ("x11", 4, None),
        ("x12", -2, "x0"),
    ]
    assert [(c.value, c.alias_of) for c in spec.enum("bigEnum_t").constants] == [(2**64 - 1, None), (2**64 - 1, "bigA")]
