"""The parser's direct libclang calls (codegen/parse/calls.py `HotCalls`, codegen/parse/builder.py `Builder.typed`) give what cindex gives, on every
declaration of the fixture header with extra declarations whose types differ only in their sugar; the doc checks
that look for a substring first answer as their regular expressions alone do."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from miogen.parse import builder, doc
from miogen.parse.unit import top_level, translation_unit
from miogen.parse.calls import hot_calls
from miogen.parse.clang_env import cindex
from miogen.parse.headers import ParseOptions, clang_args

from ..helpers import fixture_spec, release_header, target

# one clang type under several spellings (typedef sugar, elaborated, const, pointers, arrays): each parameter
# keeps its own spelling, so a lookup by clang type must not merge what only the canonical type shares
SUGAR = """
typedef int miopenTestInt_t;
typedef miopenTestInt_t miopenTestInt2_t;
typedef struct miopenTestPair { int a; int b; } miopenTestPair_t;
miopenStatus_t miopenTestSugar(int a, miopenTestInt_t b, miopenTestInt2_t c, const miopenTestInt_t d,
                               miopenTestInt_t* e, const int* f, int g[4], miopenTestInt_t h[],
                               struct miopenTestPair* i, miopenTestPair_t* j, const miopenTestPair_t* k);
miopenTestInt_t miopenTestSugarResult(miopenTestInt_t x, int y);
typedef struct miopenTestIncluded {
#include "test_fields.h"
} miopenTestIncluded_t;
"""
#: the body of a struct of SUGAR, in a file of its own: cursors whose extents are outside the main file
FIELDS = "int first;\nint second;\n"


@pytest.fixture(scope="module")
def tu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Path, str]]:
    header = release_header(tmp_path_factory.mktemp("calls"), SUGAR)
    (header.parent / "test_fields.h").write_text(FIELDS)
    text = header.read_text()
    tu = translation_unit(header, clang_args(ParseOptions(), target(), True), target())
    yield tu, header, text


def _cursors(tu: Any, header: Path) -> list[Any]:
    """Every top-level declaration and everything under it (parameters, constants, fields, expressions)."""
    out = []
    todo = list(top_level(tu, header, target().api_headers))
    while todo:
        c = todo.pop()
        out.append(c)
        todo.extend(c.get_children())
    return out


def _extent(c: Any, header: Path) -> tuple[bool, int, int, int, int]:
    ext = c.extent  # cindex's locations are the expansion locations (a macro location's: where it is expanded)
    main = all(end.file is not None and os.path.samefile(end.file.name, header) for end in (ext.start, ext.end))
    return main, ext.start.line, ext.start.offset, ext.end.line, ext.end.offset


def test_children_spelling_extent_and_line_are_cindex_values(tu: tuple[Any, Path, str]) -> None:
    unit, header, _ = tu
    calls = hot_calls()
    cursors = _cursors(unit, header)
    assert len(cursors) > 500
    for c in [unit.cursor, *cursors]:
        mine, theirs = calls.children(c), list(c.get_children())
        assert [(ch.kind, ch.spelling, ch.hash) for ch in mine] == [(ch.kind, ch.spelling, ch.hash) for ch in theirs]
        assert all(ch._tu is c._tu for ch in mine)
    for c in cursors:
        assert calls.spelling(c) == c.spelling
        assert calls.line(c.location) == c.location.line
        first = calls.extent(c)
        assert first == _extent(c, header)
        assert calls.extent(c) is first  # kept on the cursor
    outside = [calls.spelling(c) for c in cursors if not calls.extent(c)[0]]
    assert set(outside) == {"first", "second"}  # the included struct body's fields (the rest: the main file)


def test_typed_is_each_parameters_own_spelling_and_type(tu: tuple[Any, Path, str]) -> None:
    unit, header, text = tu
    fast = builder.Builder(header, text, target())
    slow = builder.Builder(header, text, target())
    top = top_level(unit, header, target().api_headers)
    fast.collect_names(top)
    slow.collect_names(top)
    calls = hot_calls()
    seen = set()
    for c in top:
        if c.kind != cindex().CursorKind.FUNCTION_DECL:
            continue
        pairs = [(calls.type(a), a, a.type) for a in c.get_arguments()]
        pairs.append((calls.result_type(c), c, c.result_type))
        for raw, where, t in pairs:
            spelling, ctype = fast.typed(raw, where)
            assert (spelling, ctype) == (t.spelling, slow.ctype(t, where))
            seen.add(spelling)
    assert {"int", "miopenTestInt_t", "miopenTestInt2_t", "const miopenTestInt_t", "miopenTestInt_t *",
            "const int *", "int *", "struct miopenTestPair *", "miopenTestPair_t *",
            "const miopenTestPair_t *"} <= seen


def test_roles_are_shared_per_value() -> None:
    roles = [p.role for f in fixture_spec().functions for p in f.params if p.role is not None]
    assert len(roles) > 10
    by_value: dict[Any, Any] = {}
    for r in roles:
        assert by_value.setdefault(r, r) is r


_FRAGMENTS = st.sampled_from(["deprecated", "Deprecated", "DEPRECATED", "@deprecated", "\\deprecated", "@deprecatedX",
                              "xdeprecated", "deprecate", "@", "\\", " ", "\n", "*", "/", "_", "use", "ingroup"])


@given(st.lists(_FRAGMENTS, max_size=8).map("".join), st.booleans())
def test_is_deprecated_is_its_regexes(comment: str, member: bool) -> None:
    expected = bool(doc._DEPRECATED_TAG.search(comment)) or (member and bool(doc._DEPRECATED_WORD.search(comment)))
    assert doc.is_deprecated(comment, member=member) is expected


def test_header_words_of_a_comment() -> None:
    """The brief is its paragraph (without `@brief`: the first paragraph), each `@param` text is its own (the
    bracket and backslash spellings too), comment markers and line breaks gone."""
    comment = ("/*! @brief Runs the\n *        forward pass.\n *\n * Details that are not the brief.\n *\n"
               " * @param handle   MIOpen handle (input)\n * @param[out] y  Output, written\n *                 in full\n"
               " * \\param  n  Count\n * @return miopenStatus_t\n */")
    assert doc.brief(comment) == "Runs the forward pass."
    assert doc.param_texts(comment) == {"handle": "MIOpen handle (input)", "y": "Output, written in full",
                                        "n": "Count"}
    assert doc.brief("/// First paragraph\n/// goes on.\n///\n/// Second.") == "First paragraph goes on."
    assert doc.brief("/*! @param x the x */") is None and doc.brief(None) is None
    assert doc.param_texts("/*! @brief nothing */") == {}


@pytest.mark.parametrize("lead", [" * ", "  *", " ** ", "/// ", "///< ", "//! ", "//!<", "", "\t"])
def test_a_param_text_over_lines_loses_each_line_s_decoration(lead: str) -> None:
    comment = f"/** @param x the first\n{lead}second line\n{lead}third */"
    assert doc.param_texts(comment) == {"x": "the first second line third"}
    closed = f"/** @param x the first\n{lead}second line\n */"  # the comment's end on a line of its own
    assert doc.param_texts(closed) == {"x": "the first second line"}


def _line_by_line(text: str) -> str:
    """The reference: each continued line without its decoration (` * `, `///`, `//!`), all joined by spaces."""
    lines = text.split("\n")
    return " ".join(" ".join([lines[0], *map(doc._undecorated, lines[1:])]).split())


@example("x\n */")
@given(st.lists(st.sampled_from(["\n", " ", "\t", "*", "/", "//", "///", "//!", "<", "*/", "x", "\r", "\x0b", "\x1c",
                                 "\u3000", "@"]), max_size=14).map("".join))
def test_a_text_s_lines_join_as_each_line_undecorated(text: str) -> None:
    """doc.py joins a text's lines in one pass: the same as taking each line's decoration off (`_undecorated`)."""
    doc._cleaned.cache_clear()
    expected = _line_by_line(text.strip())
    got = doc._cleaned(text.strip())
    if expected.endswith("/"):
        expected = doc._CLOSE.sub("", expected).rstrip()
    assert got == (expected or None) or not expected.isprintable()


_WORD_FRAGMENTS = st.sampled_from(["@brief", "@param", "[in]", "[out]", "\\param", "x", "handle", "text", " ", "\n",
                                   "\n *", "\n\n", "/*!", "*/", "///", "\t", "\x00", "\u00b5", "(input)", "@return",
                                   "a" * 700])


@given(st.lists(_WORD_FRAGMENTS, max_size=12).map("".join))
def test_header_words_are_one_printable_line(comment: str) -> None:
    """Whatever a comment holds, the words that leave doc.py are one stripped line of printable text, within the
    spec's limit for text."""
    from miogen.spec.rules import MAX_TEXT

    texts = [doc.brief(comment), *doc.param_texts(comment).values()]
    for text in texts:
        if text is None:
            continue
        assert text and text == text.strip() and text.isprintable() and "  " not in text
        assert len(text) <= MAX_TEXT
