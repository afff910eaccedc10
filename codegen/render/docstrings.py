"""The Args/Returns sections of each generated function's docstring, from the resolved semantics.

The header's own words come first, where the spec carries them (`Function.brief` as a paragraph, each
`Param.doc` after "Header:" in its entry). The rest is ours, built from what the spec and the annotations
say about a parameter: its Python type, direction, host or device memory, where an array's length comes
from, whether None is accepted and what it means (`null_means` in annotations.yaml). The text is pasted
inside a `\"\"\"` docstring: the header's and the annotations' text goes through `escape.docstring_text`;
everything else is built from validated names and fixed words.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Protocol, assert_never

from ..semantics import annotation_forms, forms
from ..semantics.resolved import FunctionSem, ParamSem, Semantics
from ..base.escape import docstring_text
from ..spec.model import CType, Function
from .plans import ParamPlan


class Names(Protocol):
    """The generated names a docstring mentions (the planner's tables)."""

    sem: Semantics
    enum_class: dict[str, str]
    handle_class: dict[str, str]
    record_class: dict[str, str]
    fn_py: dict[str, str]
    destroy_of: dict[str, str]

WIDTH = 110  # docstring lines are wrapped to this width (indentation included)
ARGS_INDENT = " " * 8
MORE_INDENT = " " * 12
FIELD_INDENT = " " * 12
FIELD_MORE = " " * 16


@functools.lru_cache(maxsize=None)
def _wrap(text: str, first: str, rest: str) -> str:
    """`text` on lines of at most WIDTH characters (words are never split): `first` before the first
    line, `rest` before the others. Cached: most functions read the same in every release."""
    words = text.split(" ")
    lines: list[str] = []
    line = first + words[0]
    for word in words[1:]:
        if len(line) + 1 + len(word) > WIDTH:
            lines.append(line)
            line = rest + word
        else:
            line += " " + word
    lines.append(line)
    return "\n".join(lines)


def _code(name: str) -> str:
    return f"`{name}`"


_VOWEL_SOUND_LETTERS = frozenset("FHLMNRSX")  # letters read with a vowel sound first ("an RNN", "an LRN")


def _a(word: str) -> str:
    """`word` with its indefinite article: "a Handle", "an ActivationMode", "an RNNDescriptor"."""
    first = word[:1]
    acronym = len(word) > 1 and word[1].isupper()
    vowel = first in "AEIOUaeiou" or (acronym and first in _VOWEL_SOUND_LETTERS)
    return ("an " if vowel else "a ") + word


class _Doc:
    def __init__(self, pl: Names, fs: FunctionSem, plans: Sequence[ParamPlan], py: dict[str, str],
                 owner: str | None) -> None:
        self.pl = pl
        self.fs = fs
        self.plans = {p.name: pp for p, pp in zip(fs.params, plans)}
        self.py = py  # C name -> Python name of every parameter
        self.owner = owner  # the Python parameter whose handle frees what this function creates
        self.destroys = pl.destroy_of.get(fs.name)  # the handle class this function destroys
        # by-value integers the caller gives as the length of an output array/blob/string
        self.sizes: dict[str, list[str]] = {}
        # hidden lengths filled in from input sequences -> those sequences
        self.shared: dict[str, list[str]] = {}
        for p in fs.params:
            match p.form:
                case forms.OutArray() | forms.ElementArray(out=True) | forms.OutBlob() | forms.OutString() if p.length:
                    self.sizes.setdefault(p.length, []).append(p.name)
                case forms.InArray() | forms.ElementArray() | forms.InBlob() if p.length:
                    self.shared.setdefault(p.length, []).append(p.name)
        # hidden output counts -> the returned lists they cut
        self.counted: dict[str, list[str]] = {}
        for p in fs.params:
            if p.count:
                self.counted.setdefault(p.count, []).append(p.name)

    # ------------------------------------------------------------------ words for types
    def _int(self, t: CType) -> str:
        return f"an int (C {t.name})"

    def value_what(self, t: CType) -> str:
        """What a Python value of base type `t` is (one element)."""
        k = t.kind
        pl = self.pl
        if k == "int":
            return self._int(t)
        if k == "float":
            return f"a float (C {t.name})"
        if k == "bool":
            return "a bool"
        if k == "char":
            return f"an int (C {t.name})"
        if k == "enum":
            cls = pl.enum_class.get(t.name)
            return f"{_a(cls)} member or its int value" if cls else f"an int (C {t.name})"
        if k == "handle":
            return f"{_a(pl.handle_class[t.name])} object"
        if k in ("struct", "union"):
            return f"a raw.{t.name} record"
        return "an int address"

    def elems_in(self, t: CType) -> str:
        """What the elements of an input sequence of base type `t` are."""
        k = t.kind
        pl = self.pl
        if k == "handle":
            return f"{pl.handle_class[t.name]} objects"
        if k == "void":
            return "device addresses (each a DeviceBuffer, or None for NULL)"
        if k == "enum" and t.name in pl.enum_class:
            return f"{pl.enum_class[t.name]} members or their int values"
        if k == "int":
            return f"ints (C {t.name})"
        if k == "float":
            return f"floats (C {t.name})"
        if k == "bool":
            return "bools"
        if k in ("struct", "union"):
            return f"raw.{t.name} records (or tuples of their fields)"
        return "int addresses"

    def out_what(self, t: CType, owned: bool, owner: str | None, plural: bool = False) -> str:
        """What MIOpen writes for one element of base type `t` (an out parameter), or for each element
        of a returned list (`plural`)."""
        k = t.kind
        pl = self.pl

        def one(singular: str, many: str) -> str:
            return many if plural else singular

        if t.depth > 0 and k != "handle" or k in ("void", "opaque", "callback", "incomplete"):
            return one("an address (int), None for NULL", "addresses (ints, None for NULL)")
        if k == "enum" and t.name in pl.enum_class:
            cls = pl.enum_class[t.name]
            return one(f"{_a(cls)} member", f"{cls} members") + " (a plain int where this release does not know the value)"
        if k == "handle":
            cls = pl.handle_class[t.name]
            if owned and owner:
                return one(f"the new {cls}", f"new {cls} objects") + f", freed together with {_code(owner)}"
            if owned:
                return one(f"the new {cls}, owning its handle", f"new {cls} objects, each owning its handle") + \
                    ": destroyed exactly once by close(), a `with` block or garbage collection"
            return one(f"a borrowed {cls}", f"borrowed {cls} objects") + " (never destroyed by Python), None for NULL"
        if k in ("struct", "union"):
            rec = pl.record_class.get(t.name, t.name)
            return one(f"{_a(rec)} record", f"{rec} records") + " of the fields MIOpen fills"
        if k == "bool":
            return one("a bool", "bools")
        if k == "float":
            return one(f"a float (C {t.name})", f"floats (C {t.name})")
        return one(f"an int (C {t.name})", f"ints (C {t.name})")

    # ------------------------------------------------------------------ lengths
    def length_call_text(self, p: ParamSem) -> str:
        """`what f(args) returns (C F, called first)` for an output sized by another call."""
        lc = p.length_call
        assert lc is not None
        callee = self.pl.sem.functions[lc.call]
        args = ", ".join(self.py[lc.args.get(q.name, q.name)] for q in callee.params
                         if q.name != lc.result and not q.hidden and q.direction != "out")
        return f"what {self.pl.fn_py[lc.call]}({args}) returns (C {lc.call}, called first)"

    def in_length(self, p: ParamSem) -> str:
        if p.unsized:
            return "its length is not passed: MIOpen works it out from the other arguments"
        if p.length is None:
            return ""
        others = [self.py[n] for n in self.shared.get(p.length, []) if n != p.name]
        length = self.fs.param(p.length)
        if not length.hidden:
            return f"its length is given by {_code(self.py[p.length])}"
        text = f"its length is passed as {_code(p.length)}"
        if others:
            text += f", shared with {', '.join(map(_code, others))} (the sequences must have the same length)"
        return text

    def out_size(self, p: ParamSem) -> str:
        """How many elements (or bytes) the wrapper allocates for an output array, string or blob."""
        if p.length_call is not None:
            return self.length_call_text(p)
        if p.length is not None:
            length = self.fs.param(p.length)
            return _code(self.py[p.length]) if not length.hidden else _code(p.length)
        return "MIOpen needs"

    def out_count(self, p: ParamSem) -> str:
        return f", cut to the count MIOpen writes to {_code(p.count)}" if p.count else ""

    # ------------------------------------------------------------------ one parameter
    def none_text(self, p: ParamSem) -> str:
        return annotation_forms.NULL_MEANS.docstring(p)

    def arg(self, p: ParamSem) -> str:
        """The Args entry text (after `name (hint): `) of a parameter in the Python signature."""
        t = p.type
        d = p.direction
        where = f"{d}, {p.memory} memory"
        form = p.form
        match form:
            case forms.Value() | forms.Length():
                if t.kind == "opaque":
                    text = ("in, by value: a HIP stream: None or 0 for the default stream, an int handle, or an "
                            "object carrying one (`.cuda_stream`)")
                elif t.kind == "callback":
                    text = (f"in, by value: a Python callable, wrapped as the C function pointer {t.name} and kept "
                            f"alive with the call's handle")
                elif t.kind == "handle" and self.destroys == self.pl.handle_class[t.name]:
                    text = (f"in, by value: {self.value_what(t)}, closed by this call: its handle is destroyed exactly "
                            f"once, and the object cannot be used afterwards")
                else:
                    text = f"in, by value: {self.value_what(t)}"
                    outs = self.sizes.get(p.name)
                    if outs:
                        text += (f"; the length of the returned {', '.join(_code(self.py[o]) for o in outs)} (the "
                                 f"wrapper allocates that many)")
                return text + "." + self.none_text(p)
            case forms.Buffer():
                what = {"in": "read by MIOpen", "out": "written by MIOpen (the caller allocates it)",
                        "inout": "read and written by MIOpen"}[d]
                elem = "" if t.kind == "void" and t.depth == 1 else f" of C {t.name} elements"
                text = f"{where}: a device address{elem} (a DeviceBuffer: an int or a tensor-like object), {what}"
            case forms.InArray() | forms.OutArray() | forms.ElementArray():
                length = self.in_length(p)
                text = f"{where}: a sequence of {self.elems_in(t)}" + (f"; {length}" if length else "")
            case forms.InString() | forms.OutString():
                text = f"{where}: a str, passed as a NUL-terminated UTF-8 C string"
            case forms.InBlob() | forms.OutBlob():
                length = self.in_length(p)
                text = f"{where}: bytes (or a bytearray or memoryview)" + (f"; {length}" if length else "")
            case forms.Callback():
                text = f"{where}: a Python callable, wrapped as the C function pointer {t.name} and kept alive"
            case forms.Opaque():
                text = f"{where}: an int address passed through untouched" + (
                    " (host memory MIOpen writes to)" if d != "in" else "")
            case forms.HostScalar() | forms.ElementScalar():
                text = (f"{where}: a scaling factor: a float (sent as C float), or a ctypes.c_float or "
                        f"ctypes.c_double (c_double for double-precision data)")
            case forms.InOutScalar():
                out = self.plans[p.name].out_name or self.py[p.name]
                text = (f"{where}: {self.value_what(t.pointee())}, passed by pointer; the value MIOpen leaves there "
                        f"is returned as {_code(out)}")
            case forms.InScalar() | forms.OutScalar() | forms.Count():
                text = f"{where}: {self.value_what(t.pointee())}, passed by pointer"
            case _:
                assert_never(form)
        return text + "." + self.none_text(p)

    def out(self, p: ParamSem) -> tuple[str, str]:
        """(direction and memory, what it is) of a returned output."""
        t = p.type
        creates = self.fs.creates
        owned = creates is not None and t.kind == "handle" and t.name == creates
        owner = self.owner
        where = f"{p.direction}, {p.memory} memory"
        form = p.form
        match form:
            case forms.Array():
                what = f"a list of {self.out_what(t.pointee(), owned, owner, plural=True)}"
                return where, f"{what}. Length: {self.out_size(p)}{self.out_count(p)}."
            case forms.String():
                return where, (f"the str MIOpen writes (UTF-8). Buffer size in bytes: "
                               f"{self.out_size(p)}{self.out_count(p)}.")
            case forms.Blob():
                return where, f"the bytes MIOpen writes. Length: {self.out_size(p)}{self.out_count(p)}."
            case forms.ByPointer() | forms.ByValue() | forms.Callback() | forms.Opaque() | forms.Buffer():
                if p.direction == "inout":
                    return where, (f"the value MIOpen leaves in {_code(self.py[p.name])}: "
                                   f"{self.out_what(t.pointee(), owned, owner)}.")
                if t.kind == "callback":
                    return where, f"the address of the C function pointer {t.name} (int), None for NULL."
                return where, f"MIOpen writes {self.out_what(t.pointee(), owned, owner)}."
            case _:
                assert_never(form)


def _header_words(text: str | None) -> str:
    """The header's text of a parameter, after our own (" Header: ..."), escaped for the docstring."""
    return f" Header: {docstring_text(text)}" if text else ""


def function_doc(pl: Names, fs: FunctionSem, plans: Sequence[ParamPlan], py: dict[str, str], owner: str | None,
                 result_class: str | None, outs: Sequence[tuple[str, str, str]], c_return: CType | None,
                 header: Function | None = None) -> str:
    """The docstring after its summary line: "\\n\\n    <the header's brief>\\n\\n    Args: ...\\n\\n    Returns:
    ...\\n    " (indented for a function body); `header` is the spec's function, whose words it quotes."""
    doc = _Doc(pl, fs, plans, py, owner)
    words = {p.name: p.doc for p in header.params if p.doc} if header is not None else {}
    lines: list[str] = []
    if header is not None and header.brief:
        lines.append(_wrap(docstring_text(header.brief), "    ", "    "))
        lines.append("")
    args = [(p, pp) for p, pp in zip(fs.params, plans) if pp.py]
    if args:
        lines.append("    Args:")
        for p, pp in args:
            lines.append(_wrap(f"{pp.py} ({pp.hint}): {doc.arg(p)}{_header_words(words.get(p.name))}", ARGS_INDENT,
                               MORE_INDENT))
        lines.append("")
    lines.append("    Returns:")
    described: list[tuple[str, str, str, str]] = []  # (name, hint, direction and memory, what it is)
    for p, pp in zip(fs.params, plans):
        if pp.out is not None:
            where, what = doc.out(p)
            described.append((pp.out_name or pp.py, pp.out_hint or "object", where,
                              what + _header_words(words.get(p.name))))
    if c_return is not None:
        what = "a str decoded as UTF-8 (\"\" for NULL)" if c_return.kind == "char" and c_return.depth == 1 else \
            doc.out_what(c_return, False, None)
        described = [("result", outs[0][1], f"returned by the C function as {c_return.spelling()}", f"{what}.")]
    if not described:
        lines.append(f"{ARGS_INDENT}None.")
    elif result_class is None:
        name, hint, where, what = described[0]
        lines.append(_wrap(f"{hint}: {_code(name)} ({where}): {what}", ARGS_INDENT, MORE_INDENT))
    else:
        lines.append(f"{ARGS_INDENT}{result_class}: a NamedTuple of the outputs:")
        for name, hint, where, what in described:
            lines.append(_wrap(f"{name} ({hint}): {where}: {what}", FIELD_INDENT, FIELD_MORE))
    hidden = _hidden_notes(doc)
    if hidden:
        lines.append("")
        lines.append("    Note:")
        lines.append(_wrap("C parameters the wrapper fills in: " + "; ".join(hidden) + ".", ARGS_INDENT, ARGS_INDENT))
    details = [pp.note for pp in plans if pp.note]  # encodings and NULL meanings (annotations' vocabulary)
    if details:
        lines.append("")
        lines.append("    Details:")
        lines += [_wrap(docstring_text(n), ARGS_INDENT, MORE_INDENT) for n in details]
    return "\n\n" + "\n".join(lines) + "\n    "


def _hidden_notes(doc: _Doc) -> list[str]:
    """C parameters that are not in the Python signature and not returned: what the wrapper passes."""
    notes = []
    for p in doc.fs.params:
        if not p.hidden:
            continue
        if isinstance(p.form, forms.ByValue):
            seqs = " = ".join(f"len({_code(doc.py[n])})" for n in doc.shared.get(p.name, []))
            notes.append(f"{_code(p.name)} (in, by value) = {seqs}" if seqs else f"{_code(p.name)} (in, by value)")
        elif p.name in doc.counted:
            cut = ", ".join(_code(doc.py[n]) for n in doc.counted[p.name])
            notes.append(f"{_code(p.name)} ({p.direction}, {p.memory} memory) receives the count that cuts {cut}")
        else:
            notes.append(f"{_code(p.name)} ({p.direction}, {p.memory} memory)")
    return notes
