"""Beta declarations told apart in one libclang pass (codegen/parse/conditionals.py) give the spec the two-pass
parse gives, and headers whose beta conditionals that cannot decide fall back to parsing twice."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from miogen.parse import parser
from miogen.parse.conditionals import beta_lines
from miogen.parse.headers import ParseOptions
from miogen.parse.parser import parse_header
from miogen.spec.spec_io import dumps

from ..helpers import release_header, target

M = "MIOPEN_BETA_API"

# -------------------------------------------------------------- the conditionals alone

DECIDABLE = {
    "ifdef": ("#ifdef M\nint a;\n#endif\n", {1, 2, 3}),
    "if defined()": ("int z;\n#if defined( M )\nint a;\n#endif\n", {2, 3, 4}),
    "if defined": ("#if defined M\nint a;\n#endif\n", {1, 2, 3}),
    "comment-only else": ("#ifdef M\nint a;\n#else\n// int a = 2;\n/* int b; */\n#endif\n", set(range(1, 7))),
    "nested other conditional": ("#ifdef M\n#ifdef X\nint a;\n#else\nint b;\n#endif\n#endif\nint c;\n", set(range(1, 8))),
    "macro only in comments": ("// M\n/* #ifndef M */\nint a; // M\n", set()),
    "continued directive": ("#ifdef \\\nM\nint a;\n#endif\n", {1, 2, 3, 4}),
    "other macros": ("#if X\nint a;\n#elif Y\nint b;\n#else\nint c;\n#endif\n", set()),
}

UNDECIDABLE = {
    "ifndef": "#ifndef M\nint a;\n#endif\n",
    "if not defined": "#if !defined(M)\nint a;\n#endif\n",
    "compound condition": "#if defined(M) && X\nint a;\n#endif\n",
    "value test": "#if M\nint a;\n#endif\n",
    "else with code": "#ifdef M\nint a;\n#else\nint b;\n#endif\n",
    "else with a directive": "#ifdef M\nint a;\n#else\n#define Q 1\n#endif\n",
    "elif of a beta block": "#ifdef M\nint a;\n#elif X\nint b;\n#endif\n",
    "elif naming it": "#if X\nint a;\n#elif defined(M)\nint b;\n#endif\n",
    "define": "#define M 1\n",
    "undef": "#undef M\n",
    "define naming it": "#define OTHER M\n",
    "used in code": "int M;\n",
    "unbalanced endif": "#ifdef M\n#endif\n#endif\n",
    "unclosed": "#ifdef M\nint a;\n",
}


@pytest.mark.parametrize("name", sorted(DECIDABLE))
def test_decidable_conditionals(name: str) -> None:
    text, lines = DECIDABLE[name]
    assert beta_lines(text.replace("M", M).replace("X", "OTHER_X").replace("Y", "OTHER_Y"), M) == lines


@pytest.mark.parametrize("name", sorted(UNDECIDABLE))
def test_undecidable_conditionals(name: str) -> None:
    assert beta_lines(UNDECIDABLE[name].replace("M", M).replace("X", "OTHER_X"), M) is None


def test_macro_in_a_string_is_code() -> None:
    assert beta_lines(f'const char* s = "{M}";\n', M) is None
    assert beta_lines('const char* s = "/* #ifndef X */";\n', M) == frozenset()


# -------------------------------------------------------------- one pass == two passes

def _parse(header: Path, one_pass: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[str, bool]:
    """The spec text, and whether the one-pass path decided it."""
    used: list[bool] = []
    real = parser.one_pass_beta

    def spy(*args: Any) -> Any:
        out = real(*args) if one_pass else None
        used.append(out is not None)
        return out

    with monkeypatch.context() as m:
        m.setattr(parser, "one_pass_beta", spy)
        text = dumps(parse_header(header, target(), ParseOptions(beta=True)))
    return text, used == [True]


GUARDS = ["none", "ifdef", "if_defined", "ifdef_comment_else", "ifndef", "ifdef_code_else", "other_if"]
DECIDED = {"none", "ifdef", "if_defined", "ifdef_comment_else", "other_if"}


def _guard(guard: str, body: str, other: str) -> str:
    return {
        "none": body,
        "ifdef": f"#ifdef {M}\n{body}\n#endif",
        "if_defined": f"#if defined({M})\n{body}\n#endif // {M}",
        "ifdef_comment_else": f"#ifdef {M}\n{body}\n#else\n// {other}\n#endif",
        "ifndef": f"#ifndef {M}\n{body}\n#endif",
        "ifdef_code_else": f"#ifdef {M}\n{body}\n#else\n{other}\n#endif",
        "other_if": f"#ifdef MIOGEN_TEST_UNDEFINED\n{other}\n#else\n{body}\n#endif",
    }[guard]


@st.composite
def headers(draw: Any) -> tuple[str, set[str]]:
    """Extra declarations for the fixture header under random conditionals: functions, enums, and enum
    constants inside stable enums; the guards used."""
    parts, used = [], set()
    for i in range(draw(st.integers(1, 6))):
        guard = draw(st.sampled_from(GUARDS))
        used.add(guard)
        if draw(st.booleans()):
            fn = f"miopenGen{i}"
            parts.append(_guard(guard, f"miopenStatus_t {fn}(int x);", f"miopenStatus_t {fn}(float y);"))
        else:
            inner = draw(st.sampled_from(GUARDS))
            used.add(inner)
            constant = _guard(inner, f"    miopenGen{i}B = 2,", f"    miopenGen{i}B = 3,")
            enum = f"typedef enum\n{{\n    miopenGen{i}A = 1,\n{constant}\n}} miopenGen{i}_t;"
            parts.append(_guard(guard, enum, f"typedef int miopenGen{i}_t;"))
    return "\n".join(parts), used


@pytest.mark.long
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(headers())
def test_one_pass_gives_the_two_pass_spec(monkeypatch: pytest.MonkeyPatch, case: tuple[str, set[str]]) -> None:
    extra, used = case
    with tempfile.TemporaryDirectory() as tmp:
        header = release_header(Path(tmp), extra)
        one, decided = _parse(header, True, monkeypatch)
        two, _ = _parse(header, False, monkeypatch)
    assert one == two
    assert decided == used.issubset(DECIDED)


def test_fixture_header_is_decided_in_one_pass(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    header = release_header(tmp_path)
    one, decided = _parse(header, True, monkeypatch)
    assert decided
    assert one == _parse(header, False, monkeypatch)[0]


def test_undecidable_header_falls_back_to_two_parses(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    header = release_header(tmp_path, f"#ifndef {M}\nmiopenStatus_t miopenOld(int x);\n#endif\n"
                                      f"#ifdef {M}\nmiopenStatus_t miopenNew(int x);\n#endif\n")
    text, decided = _parse(header, True, monkeypatch)
    assert not decided
    spec = parse_header(header, target(), ParseOptions(beta=True))
    flags = {f.name: f.beta for f in spec.functions}
    assert flags["miopenNew"] is True and "miopenOld" not in flags


# the patterns the faster ones replaced: the same matches, character for character
_PLAIN_COMMENT_OR_LITERAL = r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\''
_SNIPPETS = ["/*", "*/", "*", "/", "//", '"', "'", "\\", "\n", "a", " ", "#", "**/", "/**"]


@settings(max_examples=2000, deadline=None)
@given(text=st.lists(st.sampled_from(_SNIPPETS), max_size=24).map("".join))
def test_the_comment_patterns_match_as_the_plain_ones(text: str) -> None:
    """The unrolled block-comment patterns (conditionals.COMMENT_OR_LITERAL, doc's comments) find what the plain
    `/\\*.*?\\*/` ones find, literals with a backslash-newline included."""
    from miogen.parse import conditionals

    def spans(pattern: re.Pattern[str]) -> list[tuple[int, int]]:
        return [m.span() for m in pattern.finditer(text)]

    plain = re.compile(_PLAIN_COMMENT_OR_LITERAL, re.S)
    assert spans(conditionals.COMMENT_OR_LITERAL) == spans(plain)
    conditionals.comments.cache_clear()
    assert conditionals.comments(text) == tuple(s for s in spans(plain) if text[s[0]] == "/")


@settings(max_examples=2000, deadline=None)
@given(text=st.lists(st.sampled_from([*_SNIPPETS, "#if X", "#endif", "\\\n", "\t", "x#"]), max_size=24).map("".join))
@example(text="#if X\\\n#endif\n#endif")  # a continued directive's next line holds no directive of its own
def test_the_code_and_its_directives_are_the_regexes_own(text: str) -> None:
    """The class of a header's text seen by `beta_lines`: its code is what the comment-or-literal pattern's `sub`
    gives (a comment: a space and its newlines), and its directives are what `_DIRECTIVE.finditer` finds."""
    from miogen.parse import conditionals

    conditionals.comments.cache_clear()

    def blank(m: re.Match[str]) -> str:
        return m.group(0) if m.group(0)[0] in "\"'" else " " + "\n" * m.group(0).count("\n")

    code = conditionals._code(text)
    assert code == conditionals.COMMENT_OR_LITERAL.sub(blank, text)
    assert ([m.span() for m in conditionals._directives(code)] ==
            [m.span() for m in conditionals._DIRECTIVE.finditer(code)])


@settings(max_examples=2000, deadline=None)
@given(text=st.lists(st.sampled_from(["/**", "*/", "//", "\n", " ", "@{", "@}", "@defgroup g", "@addtogroup h",
                                      "@defgroup", "@", "{", '"', "x", "@ingroup g"]), max_size=24).map("".join))
@example(text="//@defgroup\nx /**@{*/")  # a name after the comment's end is none of its
@example(text='"/**@defgroup g @{*/"')  # a comment marker in a string literal starts no comment
def test_the_group_index_is_each_comments_events(text: str) -> None:
    """doc.GroupIndex finds the group events (`@addtogroup X`, `@defgroup X`, `@{`, `@}`) each comment's own text
    holds, as a scan of each comment alone finds them, at their lines."""
    from miogen.parse import conditionals, doc

    conditionals.comments.cache_clear()
    lines, groups, stack = [], [], []
    pending = None
    for start, end in conditionals.comments(text):
        for ev in doc._GROUP_EVENT.finditer(text[start:end]):
            if ev.group(1):
                pending = ev.group(2)
                continue
            if ev.group(0) == "@{":
                stack.append(pending)
                pending = None
            elif stack:
                stack.pop()
            lines.append(text.count("\n", 0, start + ev.start()) + 1)
            groups.append(stack[-1] if stack else None)
    index = doc.GroupIndex(text)
    assert (index._lines, index._groups) == (lines, groups)


@settings(max_examples=2000, deadline=None)
@given(text=st.lists(st.sampled_from(["BETA_X", "BETA_", "X", "_", "a", "1", " ", "\n", "é", "٣", "("]),
                     max_size=16).map("".join))
def test_the_macro_is_found_where_a_word_boundary_regex_finds_it(text: str) -> None:
    """conditionals._mentions (str.find) gives the offsets `\\bMACRO\\b` gives (Unicode word characters too)."""
    import re

    from miogen.parse import conditionals

    assert conditionals._mentions(text, "BETA_X") == [m.start() for m in re.finditer(r"\bBETA_X\b", text)]
