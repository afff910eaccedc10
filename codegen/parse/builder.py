"""Cursors -> model: the items of one translation unit (functions, enums, records, handles, callbacks,
typedefs), and the check that the header is the target's."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..base.record import replace
from . import doc, roles
from ..spec import literals, rules, validate
from .clang_env import cindex
from ..base.errors import HeaderError
from ..spec.model import (
    BaseKind,
    Callback,
    CType,
    Enum,
    EnumConstant,
    Field,
    Function,
    Handle,
    Param,
    Record,
    Typedef,
)
from ..spec.target import Target
from .calls import hot_calls
from .unit import top_level


_INT_KINDS = {
    "INT": "int", "UINT": "unsigned int", "LONG": "long", "ULONG": "unsigned long", "LONGLONG": "long long",
    "ULONGLONG": "unsigned long long", "SHORT": "short", "USHORT": "unsigned short", "SCHAR": "signed char",
    "UCHAR": "unsigned char", "INT128": "__int128", "UINT128": "unsigned __int128",
}
_FLOAT_KINDS = {"FLOAT": "float", "DOUBLE": "double", "LONGDOUBLE": "long double", "HALF": "_Float16"}


class Builder:
    """Turns the cursors of one translation unit into model objects."""

    def __init__(self, header: Path, text: str, target: Target) -> None:
        self.ci = cindex()
        self.header = header
        self.data = text.encode("utf-8")
        self.target = target
        self.groups = doc.GroupIndex(text)
        self.handles: dict[str, str] = {}  # typedef name -> struct tag
        self.callbacks: set[str] = set()
        self.enums: set[str] = set()
        self.records: dict[str, str] = {}  # clang decl hash key -> model name
        self.tu: Any = None
        self.api_files = {str(header), *(str(header.parent / n) for n in target.api_headers)}
        # one translation unit: a type's spelling names one type, so its CType is computed once
        self._ctypes: dict[str, CType] = {}
        self._typed: dict[tuple[int, int, int], tuple[str, CType]] = {}
        self._lower: bytes | None = None
        self._params: dict[tuple[str, str | None, doc.ParamTag | None, str | None, str | None], Param] = {}
        self.calls = hot_calls()
        TK = self.ci.TypeKind
        self._unsigned_kinds = (TK.CHAR_U, TK.UCHAR, TK.CHAR16, TK.CHAR32, TK.USHORT, TK.UINT, TK.ULONG, TK.ULONGLONG,
                                TK.UINT128)
        CK = self.ci.CursorKind
        self._literal_kinds = frozenset(k.value for k in (CK.INTEGER_LITERAL, CK.FLOATING_LITERAL, CK.CHARACTER_LITERAL,
                                                          CK.STRING_LITERAL, CK.CXX_BOOL_LITERAL_EXPR,
                                                          CK.CXX_NULL_PTR_LITERAL_EXPR))

    # ------------------------------------------------------------------ types
    def _error(self, cursor: Any, message: str) -> HeaderError:
        loc = cursor.location
        return HeaderError(f"{loc.file.name if loc.file else self.header}:{loc.line}:{loc.column}: {message}")

    def valid(self, cursor: Any, item: Any) -> Any:
        """`item` if its names and strings pass codegen/spec/validate.py; else an error at `cursor`."""
        try:
            validate.check_model(item)
        except rules.Violation as exc:
            what = type(item).__name__.lower()
            raise self._error(cursor, f"{what} {rules.short(getattr(item, 'name', None))}: {exc.path}: "
                                      f"{exc.message}") from None
        return item

    def typed(self, t: Any, where: Any) -> tuple[str, CType]:
        """(spelling, model type) of the clang type `t` (of `HotCalls.type`/`.result_type` of cursor `where`), looked
        up by its identity: a CXType's kind and data pointers are the clang type, so within one translation unit
        equal types give equal keys."""
        data = t.data
        key = (t._kind_id, data[0], data[1])
        found = self._typed.get(key)
        if found is None:
            t._tu = where._tu
            spelling = self.calls.type_spelling(t)
            found = self._typed[key] = (spelling, self.ctype(t, where, spelling))
        return found

    def ctype(self, t: Any, where: Any, spelling: str | None = None) -> CType:
        """The model type of clang type `t` (cached by spelling; `where` locates errors)."""
        spelling = spelling if spelling is not None else t.spelling
        cached = self._ctypes.get(spelling)
        if cached is None:
            cached = self._ctypes[spelling] = self._new_ctype(t, where)
        return cached

    def _new_ctype(self, t: Any, where: Any) -> CType:
        TK = self.ci.TypeKind
        calls = self.calls
        elaborated, pointer = TK.ELABORATED.value, TK.POINTER.value
        consts: list[bool] = []  # outermost first
        array: int | None = None
        cur = t
        while True:
            const = calls.is_const(cur)
            while cur._kind_id == elaborated:
                cur = calls.named_type(cur)
            if cur._kind_id == pointer:
                consts.append(const)
                cur = calls.pointee(cur)
                continue
            if cur.kind == TK.INCOMPLETEARRAY:  # `T x[]` as a parameter is `T *x`
                consts.append(False)
                cur = cur.element_type
                continue
            if cur.kind == TK.CONSTANTARRAY and array is None and not consts:
                array = cur.element_count
                cur = cur.element_type
                continue
            kind, name = self._base(cur, where)
            consts.append(const)
            break
        depth = len(consts) - 1
        return CType(kind=kind, name=name, depth=depth, const=tuple(reversed(consts)), array=array)

    def _base(self, t: Any, where: Any) -> tuple[BaseKind, str]:
        TK = self.ci.TypeKind
        if t._kind_id == TK.TYPEDEF.value:  # the common case, in direct calls
            name = self.calls.spelling(self.calls.type_declaration(t))
            if name in self.handles:
                return "handle", name
            if name in self.callbacks:
                return "callback", name
            if name in self.enums:
                return "enum", name
            if name in self.records.values():
                return self._record_kind(t.get_canonical()), name
            canon = t.get_canonical()
            ck = canon.kind
            if ck == TK.POINTER:
                pointee = canon.get_pointee()
                return ("callback" if pointee.kind == TK.FUNCTIONPROTO else "opaque"), name
            if ck == TK.ENUM:  # an enum declared outside the API's headers: its integer type
                return self._builtin(canon.get_declaration().enum_type.get_canonical(), where)[0], \
                    _INT_KINDS.get(canon.get_declaration().enum_type.get_canonical().kind.name, "unsigned int")
            if ck == TK.RECORD:
                return self._record_kind(canon) if canon.get_size() > 0 else "incomplete", name
            kind, _ = self._builtin(canon, where)
            return kind, name
        k = t.kind
        if k == TK.RECORD:
            kind = self._record_kind(t) if t.get_size() > 0 else "incomplete"  # declared, never defined
            return kind, t.get_declaration().spelling
        if k == TK.ENUM:
            return "enum", t.get_declaration().spelling
        return self._builtin(t, where)

    def _record_kind(self, t: Any) -> BaseKind:
        return "union" if t.get_declaration().kind == self.ci.CursorKind.UNION_DECL else "struct"

    def _builtin(self, t: Any, where: Any) -> tuple[BaseKind, str]:
        name = t.kind.name
        if name == "VOID":
            return "void", "void"
        if name == "BOOL":
            return "bool", "bool"
        if name in ("CHAR_S", "CHAR_U"):
            return "char", "char"
        if name in _INT_KINDS:
            return "int", _INT_KINDS[name]
        if name in _FLOAT_KINDS:
            return "float", _FLOAT_KINDS[name]
        raise self._error(where, f"unsupported type '{t.spelling}' (kind {name}); miogen cannot bind it")

    # ------------------------------------------------------------------ declarations
    def collect_names(self, cursors: list[Any]) -> None:
        """First pass: which typedef names are handles, callbacks, enums and records."""
        CK = self.ci.CursorKind
        TK = self.ci.TypeKind
        enum_kind, typedef_kind = CK.ENUM_DECL.value, CK.TYPEDEF_DECL.value
        calls = self.calls
        for c in cursors:
            k = c._kind_id
            if k == enum_kind and c.is_definition():
                self.enums.add(calls.spelling(c))
            elif k == typedef_kind:
                canon = calls.canonical(calls.underlying(c))
                if canon._kind_id == TK.POINTER.value:
                    pointee = calls.pointee(canon)
                    if pointee._kind_id == TK.FUNCTIONPROTO.value:
                        self.callbacks.add(self.calls.spelling(c))
                    elif pointee._kind_id == TK.RECORD.value:
                        decl = pointee.get_declaration()
                        loc = decl.location.file
                        if loc is not None and loc.name in self.api_files and not list(pointee.get_fields()):
                            self.handles[self.calls.spelling(c)] = decl.spelling
                elif canon._kind_id == TK.ENUM.value:
                    self.enums.add(self.calls.spelling(c))

    def _group(self, cursor: Any, comment: str | None, location: Any = None) -> str | None:
        return doc.ingroup(comment) or self.groups.at(self.calls.line(location or cursor.location))

    def function(self, c: Any) -> Function:
        calls = self.calls
        comment = calls.raw_comment(c)
        tags, texts = doc.params(comment)
        location = c.location
        args = calls.arguments(c)
        # default arguments are rare: look for them only where the declaration's text has an `=`
        defaults = bool(args) and self._may_have_defaults(c)
        params = []
        cache = self._params
        typed = self._typed
        cursor_type, cstring, dispose, cursor_spelling = (calls._cursor_type, calls._cstring, calls._dispose,
                                                          calls._cursor_spelling)
        for a in args:  # the hot loop of a parse: `HotCalls.spelling` and `typed` written out
            s = cursor_spelling(a)
            name = (cstring(s) or b"").decode("utf-8") or None
            dispose(s)
            t = cursor_type(a)
            data = t.data
            found = typed.get((t._kind_id, data[0], data[1]))
            spelling, ctype = found if found is not None else self.typed(t, a)
            tag = tags.get(name) if tags and name else None
            text = texts.get(name) if texts and name else None
            default = self._default(a, ctype) if defaults else None
            key = (spelling, name, tag, default, text)
            param = cache.get(key)
            if param is None:  # a parameter like `miopenHandle_t handle`: built once, shared
                doc_tag = tag.direction if tag else None
                param = cache[key] = Param(name=name, c=spelling, type=ctype, default=default, doc_tag=doc_tag,
                                           doc_optional=bool(tag and tag.optional),
                                           role=roles.propose(ctype, name, doc_tag, self.target), doc=text)
            params.append(param)
        return Function(
            name=calls.spelling(c),
            returns=self.typed(calls.result_type(c), c)[1],
            params=tuple(params),
            group=self._group(c, comment, location),
            deprecated=doc.is_deprecated(comment),
            brief=doc.brief(comment),
        )

    def _may_have_defaults(self, c: Any) -> bool:
        main, _, start, _, end = self.calls.extent(c)
        if not main:  # in another file: ask clang for each parameter
            return True
        return b"=" in self.data[start:end]

    def _default(self, parm: Any, ctype: CType) -> str | None:
        """The canonical spelling of a default argument (codegen/spec/literals.py), or an error at it."""
        CK = self.ci.CursorKind
        for ch in parm.get_children():
            if not ch.kind.is_expression():
                continue
            ext = ch.extent
            text = self.data[ext.start.offset : ext.end.offset].decode("utf-8", "replace")
            values: dict[str, int] = {}
            for ref in ch.walk_preorder():  # enum constants the expression names, with their values
                target = ref.referenced if ref.kind == CK.DECL_REF_EXPR else None
                if target is not None and target.kind == CK.ENUM_CONSTANT_DECL:
                    values[target.spelling] = int(target.enum_value)
            decl = parm.type.get_canonical().get_declaration()
            members = ({e.spelling for e in decl.get_children() if e.kind == CK.ENUM_CONSTANT_DECL}
                       if decl is not None and decl.kind == CK.ENUM_DECL else None)
            try:
                return literals.canonical(literals.parse(text), ctype, values.get, lambda _: members)
            except literals.LiteralError as exc:
                raise self._error(parm, f"default argument of {parm.spelling or 'a parameter'}: {exc}") from None
        return None

    def enum(self, c: Any, upto: int | None = None) -> Enum:
        """The enum of cursor `c`; `upto`: where the next declaration starts in the header's text (else its end)."""
        calls = self.calls
        constant_kind = self.ci.CursorKind.ENUM_CONSTANT_DECL.value
        enum_type = c.enum_type
        unsigned = enum_type.kind in self._unsigned_kinds  # as cindex's enum_value decides it
        constants: list[EnumConstant] = []
        first_by_value: dict[int, str] = {}
        main, _, start, _, _ = calls.extent(c)
        # a comment clang attaches to a constant lies inside the braces, or starts on the line the constant ends on
        # (even after the `};`) and runs on in the comments right below: before the next declaration. Where the
        # word is nowhere there, no constant is deprecated (`doc.is_deprecated` needs it) and none's is fetched.
        deprecations = not main or b"deprecated" in self._lowered()[start:len(self.data) if upto is None else upto]
        for e in calls.children(c):
            if e._kind_id != constant_kind:
                continue
            value = calls.enum_value(e, unsigned)
            name = calls.spelling(e)
            alias = self._alias_target(e) or first_by_value.get(value)
            first_by_value.setdefault(value, name)
            deprecated = deprecations and doc.is_deprecated(
                calls.raw_comment(e) or self._trailing_comment(calls.extent(e)[4]), member=True)
            constants.append(EnumConstant(name=name, value=value, alias_of=alias, deprecated=deprecated))
        return Enum(
            name=calls.spelling(c),
            underlying=enum_type.get_canonical().spelling,
            constants=tuple(constants),
            group=self._group(c, calls.raw_comment(c)),
        )

    def next_start(self, cursors: list[Any], i: int) -> int | None:
        """Where the first declaration after `cursors[i]` (in the header's text, past its end) starts; None where
        the next is in another file."""
        _, _, _, _, end = self.calls.extent(cursors[i])
        for c in cursors[i + 1:]:
            main, _, start, _, _ = self.calls.extent(c)
            if not main:
                return None
            if start > end:  # not a `typedef` around the enum, which starts before it
                return start
        return None

    def _lowered(self) -> bytes:
        """The header's bytes in ASCII lower case (made at the first ask)."""
        if self._lower is None:
            self._lower = self.data.lower()
        return self._lower

    _TRAILING = re.compile(rb"[ \t]*,?[ \t]*(/\*.*?\*/|//[^\n]*)", re.S)

    def _trailing_comment(self, end: int) -> str | None:
        """A member comment right after a declaration ending at offset `end` (and its comma) that clang did not
        attach."""
        m = self._TRAILING.match(self.data, end)
        return m.group(1).decode("utf-8") if m else None

    def _alias_target(self, e: Any) -> str | None:
        """The constant this one is defined as (`A = B`), if any: the enum constant its initializer names, where
        its tokens are exactly `A = B`."""
        target = self._named_constant(e)
        if target is None:
            return None
        expr = [t.spelling for t in e.get_tokens()]
        return str(target.spelling) if len(expr) == 3 and expr[1] == "=" else None

    def _named_constant(self, cursor: Any) -> Any:
        """The first enum constant an expression under `cursor` names (depth first, as `walk_preorder`), or None;
        a literal's cursor has no children and is not visited."""
        CK = self.ci.CursorKind
        for ch in self.calls.children(cursor):
            kind = ch._kind_id
            if kind == CK.DECL_REF_EXPR.value:
                ref = ch.referenced
                if ref is not None and ref.kind == CK.ENUM_CONSTANT_DECL:
                    return ref
            if kind not in self._literal_kinds:
                found = self._named_constant(ch)
                if found is not None:
                    return found
        return None

    def record(self, c: Any, name: str | None, typedef: str | None, tag: str | None) -> Record:
        CK = self.ci.CursorKind
        t = c.type
        fields: list[Field] = []
        for ch in c.get_children():
            if ch.kind == CK.FIELD_DECL:
                offset = t.get_offset(ch.spelling)
                fields.append(Field(name=ch.spelling, offset=offset // 8, type=self.ctype(ch.type, ch), c=ch.type.spelling))
            elif ch.kind in (CK.UNION_DECL, CK.STRUCT_DECL) and ch.is_anonymous():
                inner = self.record(ch, None, None, None)
                first = next((f.name for f in inner.fields if f.name), None)
                if first is None:
                    raise self._error(ch, "anonymous record without named members is not supported")
                offset = t.get_offset(first) // 8
                fields.append(Field(name=None, offset=offset, record=inner))
        return Record(
            name=name,
            kind="union" if c.kind == CK.UNION_DECL else "struct",
            size=t.get_size(),
            align=t.get_align(),
            fields=tuple(fields),
            tag=tag,
            typedef=typedef,
            group=self._group(c, c.raw_comment) if name else None,
        )

    def callback(self, c: Any) -> Callback:
        """A function-pointer typedef; parameters as written (names and typedef'd types) when spelt out."""
        TK = self.ci.TypeKind
        proto = c.underlying_typedef_type.get_canonical().get_pointee()
        written = [ch for ch in c.walk_preorder() if ch.kind == self.ci.CursorKind.PARM_DECL]
        arg_types = list(proto.argument_types()) if proto.kind == TK.FUNCTIONPROTO else []
        params = []
        for i, at in enumerate(arg_types):
            if len(written) == len(arg_types):
                name, at = written[i].spelling or None, written[i].type
            else:
                name = None
            params.append(Param(name=name, c=at.spelling, type=self.ctype(at, c)))
        return Callback(name=c.spelling, returns=self.ctype(proto.get_result(), c), params=tuple(params))


def _is_anonymous_record(c: Any) -> bool:
    toks = [t.spelling for t in c.get_tokens()][:2]
    return len(toks) == 2 and toks[1] == "{"


def build_spec(tu: Any, header: Path, text: str, target: Target, cursors: list[Any] | None = None) -> dict[str, list[Any]]:
    """All API items of one parse, in header order (`cursors`: its top-level declarations, if known)."""
    b = Builder(header, text, target)
    CK = b.ci.CursorKind
    function_kind, enum_kind, typedef_kind = CK.FUNCTION_DECL.value, CK.ENUM_DECL.value, CK.TYPEDEF_DECL.value
    record_kinds = (CK.STRUCT_DECL.value, CK.UNION_DECL.value)
    if cursors is None:
        cursors = top_level(tu, header, target.api_headers)
    check_is_target(header, cursors, target)  # first: a foreign header's own types are not worth an error
    b.collect_names(cursors)
    handles: list[Handle] = []
    typedefs: list[Typedef] = []
    enums: list[Enum] = []
    records: list[Record] = []
    callbacks: list[Callback] = []
    functions: list[Function] = []
    pending_records: dict[str, Any] = {}  # usr -> anonymous record cursor awaiting its typedef
    for i, c in enumerate(cursors):
        k = c._kind_id  # cindex's `kind` makes an object of it
        if k == function_kind:
            functions.append(b.valid(c, b.function(c)))
        elif k == enum_kind and c.is_definition():
            enums.append(b.valid(c, b.enum(c, b.next_start(cursors, i))))
        elif k in record_kinds and c.is_definition():
            if not list(c.type.get_fields()):
                continue  # the empty struct behind an opaque handle
            if _is_anonymous_record(c):
                pending_records[c.get_usr()] = c
            else:
                name = b.calls.spelling(c)
                records.append(b.valid(c, b.record(c, name, None, name)))
                b.records[c.get_usr()] = name
        elif k == typedef_kind:
            name = b.calls.spelling(c)
            if name in b.handles:
                group = b._group(c, b.calls.raw_comment(c))
                handles.append(b.valid(c, Handle(name=name, tag=b.handles[name], group=group)))
            elif name in b.callbacks:
                callbacks.append(b.valid(c, b.callback(c)))
            elif name in b.enums:
                continue
            else:
                under = c.underlying_typedef_type
                decl = under.get_canonical().get_declaration()
                usr = decl.get_usr() if decl is not None else ""
                if usr in pending_records:
                    b.records[usr] = name
                    records.append(b.valid(c, b.record(pending_records.pop(usr), name, name, None)))
                elif usr in b.records:
                    records = [b.valid(c, replace(r, typedef=name)) if r.name == b.records[usr] else r for r in records]
                else:
                    typedefs.append(b.valid(c, Typedef(name=name, type=b.ctype(under, c), c=under.spelling)))
    return {
        "handles": handles, "typedefs": typedefs, "enums": enums, "records": records,
        "callbacks": callbacks, "functions": functions,
    }


def stable_names(tu: Any, header: Path, api_headers: tuple[str, ...] = ()) -> tuple[set[str], dict[str, set[str]]]:
    """Names declared without the beta macro: every top-level name, and each enum's constants."""
    ci = cindex()
    CK = ci.CursorKind
    names: set[str] = set()
    constants: dict[str, set[str]] = {}
    for c in top_level(tu, header, api_headers):
        names.add(c.spelling)
        if c.kind == CK.ENUM_DECL:
            constants[c.spelling] = {e.spelling for e in c.get_children() if e.kind == CK.ENUM_CONSTANT_DECL}
    return names, constants


def check_is_target(header: Path, cursors: list[Any], target: Target) -> None:
    """Refuse a header that is not the target's (no status enum, or none of its functions), from the names of its
    top-level declarations alone: before any type of it is bound, so a foreign header (stdio.h, zlib.h) gets this
    error rather than one about a type miogen cannot bind."""
    calls = hot_calls()
    CK = cindex().CursorKind
    function_kind, enum_kind, typedef_kind = CK.FUNCTION_DECL.value, CK.ENUM_DECL.value, CK.TYPEDEF_DECL.value
    functions = sorted({calls.spelling(c) for c in cursors if c._kind_id == function_kind})
    enums = sum(1 for c in cursors if c._kind_id == enum_kind and c.is_definition())
    has_status = any(c._kind_id in (enum_kind, typedef_kind) and calls.spelling(c) == target.status_type
                     for c in cursors)
    fns = [f for f in functions if f.startswith(target.function_prefix)]
    if not has_status or not fns:
        others = functions[:3]
        raise HeaderError(
            f"{header}: this does not look like {target.display_name}'s {target.header}: it declares "
            + (f"no enum {target.status_type}" if not has_status else "")
            + (" and " if not has_status and not fns else "")
            + (f"none of the target's functions (prefix {target.function_prefix}*)" if not fns else "")
            + f" (found {len(functions)} function(s)"
            + (f", e.g. {', '.join(others)}" if others else "") + f", {enums} enum(s)). "
            f"Pass the path of {target.display_name}'s {target.header}, or, for another library, its target facts "
            f"with --target (these are {target.path})"
        )
