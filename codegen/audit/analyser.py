"""The C++ analyser: traces each pointer and handle parameter through a function's body (and the
functions it is passed to) into `Fact`s."""

from __future__ import annotations

import re

from ..base.record import record, replace
from .cppsrc import KEYWORDS, CppDef, Source, SourceFile, split_args
from .idioms import Idioms


@record
class Fact:
    """One thing the implementation does with a parameter."""

    kind: str  # see FACT_KINDS
    detail: str
    where: str  # file:function
    depth: int  # 0: the C function itself; n: n calls deep


FACT_KINDS = {
    "write": "written through the pointer",
    "write-address": "receives an address",
    "read": "read through the pointer on the host",
    "read-as": "read as a scalar of a given type",
    "device": "passed on as device memory",
    "null-accepts": "NULL tested and handled",
    "null-conditional": "NULL rejected only together with another condition",
    "null-rejects": "NULL rejected with an error",
    "null-unsafe": "dereferenced without a NULL test",
    "stride": "indexed in groups of k",
    "range": "read as a range of n elements",
    "stored": "kept in an object after the call",
    "unused": "not used by the implementation",
}
_NULL_EVENTS = ("null-accepts", "null-conditional", "null-rejects", "null-unsafe")
_HOST = ("write", "write-address", "read", "read-as", "stride", "range", "null-unsafe")

_STD_ALGOS: dict[str, dict[int, str]] = {  # argument index -> read/write
    "copy": {0: "read", 1: "read", 2: "write"},
    "copy_n": {0: "read", 2: "write"},
    "copy_backward": {0: "read", 1: "read", 2: "write"},
    "fill": {0: "write", 1: "write"},
    "fill_n": {0: "write"},
    "memcpy": {0: "write", 1: "read"},
    "memmove": {0: "write", 1: "read"},
    "memset": {0: "write"},
    "strcpy": {0: "write", 1: "read"},
    "strncpy": {0: "write", 1: "read"},
    "transform": {0: "read", 1: "read", 2: "write"},
    "iota": {0: "write", 1: "write"},
    "accumulate": {0: "read", 1: "read"},
    "all_of": {0: "read", 1: "read"},
    "any_of": {0: "read", 1: "read"},
    "equal": {0: "read", 1: "read", 2: "read"},
}
_ASSIGN = re.compile(r"\s*(?:[-+*/%|&^]|<<|>>)?=(?!=)")
_ASSIGN_ONLY = re.compile(r"\s*=(?!=)")
_ELSE = re.compile(r"\s*else\b")
_IF = re.compile(r"\bif\s*\(")
_MEMBERS = re.compile(r"(?:\s*(?:\.|->)\s*[A-Za-z_]\w*|\s*\[[^\[\]]*\])*")
_CAST = re.compile(r"(static_cast|reinterpret_cast|const_cast)\s*<\s*(?:const\s+)?([\w:]+)\s*(?:const\s*)?(\*+)\s*>\s*$")
_CSTYLE = re.compile(r"\(\s*(?:const\s+)?([A-Za-z_][\w:]*)\s*(?:const\s*)?(\*+)\s*\)\s*$")
_NOT_DECL = frozenset({"return", "else", "case", "new", "throw", "delete", "co_return", "and", "or", "not", "goto"})


@record(frozen=False)
class _Ctx:
    d: CppDef
    f: SourceFile
    lo: int
    hi: int
    depth: int
    ignored: list[tuple[int, int]]


class Analyzer:
    """Traces names through definitions; results are memoised per (definition, name, level, depth)."""

    def __init__(self, source: Source, idioms: Idioms, max_depth: int = 2, max_candidates: int = 6) -> None:
        self.source = source
        self.idioms = idioms
        self.max_depth = max_depth
        self.max_candidates = max_candidates
        self._memo: dict[tuple[int, int, str, int, int], tuple[Fact, ...]] = {}
        self._active: set[tuple[int, int, str, int]] = set()
        self._ignored: dict[tuple[int, int], list[tuple[int, int]]] = {}
        self._throws = re.compile("|".join(f"(?:{t})" for t in idioms.throws)) if idioms.throws else None
        self._ignore_calls = re.compile(
            r"(?<![\w$])(?:\w+::)*(?:" + "|".join(idioms.ignore_calls) + r")\b\s*(?:<[^;(){}]*>)?\s*(?:[A-Za-z_]\w*\s*)?[({]"
        ) if idioms.ignore_calls else None
        self._ignore_if = re.compile("|".join(f"(?:{t})" for t in idioms.ignore_if)) if idioms.ignore_if else None

    # ------------------------------------------------------------------ entry points

    def trace(self, d: CppDef, name: str, level: int = 0, depth: int = 0) -> tuple[Fact, ...]:
        key = (d.file, d.body, name, level, depth)
        if key in self._memo:
            return self._memo[key]
        active = key[:4]
        if active in self._active:  # recursion
            return ()
        self._active.add(active)
        try:
            ctx = _Ctx(d=d, f=self.source.files[d.file], lo=d.region, hi=d.end, depth=depth,
                       ignored=self._ignored_spans(d))
            facts = self._occurrences(ctx, name, level, ctx.lo)
        finally:
            self._active.discard(active)
        result = tuple(facts)
        self._memo[key] = result
        return result

    def trace_param(self, d: CppDef, index: int) -> tuple[Fact, ...]:
        p = d.params[index] if index < len(d.params) else None
        if p is None or p.name is None:
            return (Fact("unused", "unnamed in the definition", d.where, 0),)
        facts = self.trace(d, p.name)
        if not facts and not self._mentions(d, p.name):
            return (Fact("unused", "never mentioned", d.where, 0),)
        return facts

    def _mentions(self, d: CppDef, name: str) -> bool:
        ctx = _Ctx(d=d, f=self.source.files[d.file], lo=d.region, hi=d.end, depth=0, ignored=self._ignored_spans(d))
        return any(not self._is_ignored(ctx, m.start()) for m in self._find(ctx, name, ctx.lo))

    # ------------------------------------------------------------------ occurrences

    @staticmethod
    def _name_regex(name: str) -> re.Pattern[str]:
        parts = [re.escape(p) for p in name.split(".")]
        return re.compile(r"(?<![\w.$])(?<!->)(?<!::)" + r"\s*\.\s*".join(parts) + r"(?![\w$])(?!\s*::)")

    def _find(self, ctx: _Ctx, name: str, start: int) -> list[re.Match[str]]:
        return list(self._name_regex(name).finditer(ctx.f.text, start, ctx.hi))

    def _ignored_spans(self, d: CppDef) -> list[tuple[int, int]]:
        key = (d.file, d.body)
        if key in self._ignored:
            return self._ignored[key]
        f = self.source.files[d.file]
        t, pairs = f.text, f.pairs
        spans: list[tuple[int, int]] = []
        if self._ignore_calls is not None:
            for m in self._ignore_calls.finditer(t, d.region, d.end):
                close = pairs.get(m.end() - 1, -1)
                if close > m.start():
                    spans.append((m.start(), close + 1))
        if self._ignore_if is not None:
            for m in _IF.finditer(t, d.region, d.end):
                close = pairs.get(m.end() - 1, -1)
                if close < 0 or not self._ignore_if.search(t, m.end(), close):
                    continue
                _, stmt_end = self._statement_after(f, close + 1, d.end)
                spans.append((m.start(), stmt_end))
        spans.sort()
        self._ignored[key] = spans
        return spans

    @staticmethod
    def _is_ignored(ctx: _Ctx, pos: int) -> bool:
        return any(a <= pos < b for a, b in ctx.ignored)

    def _occurrences(self, ctx: _Ctx, name: str, level: int, start: int) -> list[Fact]:
        facts: list[Fact] = []
        for m in self._find(ctx, name, start):
            if self._is_ignored(ctx, m.start()):
                continue
            if self._is_declaration(ctx, m.start(), m.end()):
                continue
            found = _collapse_null(self._idiom_reads(ctx, name, m.start(), m.end())
                                   + self._expr(ctx, name, m.start(), m.end(), level))
            if any(f.kind in ("null-rejects", "null-unsafe") for f in found) and \
                    self._under_condition(ctx, m.start(), name):
                found = [replace(f, kind="null-conditional", detail=f"{f.detail}, under a condition")
                         if f.kind in ("null-rejects", "null-unsafe") else f for f in found]
            facts += found
        return facts

    def _under_condition(self, ctx: _Ctx, pos: int, name: str) -> bool:
        """Whether `pos` runs only in some cases: in one branch of an if/else (the other not mentioning `name`),
        a switch, or a conditional expression."""
        t, pairs = ctx.f.text, ctx.f.pairs
        rx = self._name_regex(name)
        p = pos
        while True:
            enc = self._enclosing(ctx, p)
            if enc is None:
                return False
            o = enc[0]
            if t[o] in "([" or (t[o] == "{" and self._brace_init(ctx, o)):
                if self._ternary_branch(ctx, o + 1, p):
                    return True
                p = o
                continue
            # p sits in the block {...} at o: the statement holding it (an if/else chain counts as one)
            i = p - 1
            while i > o:
                c = t[i]
                if c in ")]" or c == "}":
                    j = pairs.get(i, -1)
                    if o < j < i and (c != "}" or re.compile(r"\s*(?:[),;]|else\b)").match(t, i + 1)):
                        i = j - 1
                        continue
                if c in ";{}":
                    break
                i -= 1
            stmt_lo = i + 1
            stmt = t[stmt_lo:p]
            head = re.match(r"\s*(if|switch|case|default)\b", stmt)
            if head and head.group(1) == "if":
                ho = t.find("(", stmt_lo + head.end())
                hc = pairs.get(ho, p) if ho >= 0 else p
                if hc < p:
                    ts, te = self._statement_after(ctx.f, hc + 1, ctx.hi)
                    els = _ELSE.match(t, te)
                    other = ""
                    if p < te:  # in the then-branch
                        if els:
                            es, ee = self._statement_after(ctx.f, els.end(), ctx.hi)
                            other = t[es:ee]
                    else:
                        other = t[ts:te]
                    if not rx.search(other):
                        return True
            elif head:
                return True
            if self._ternary_branch(ctx, stmt_lo, p):
                return True
            if o <= ctx.d.body:
                return False
            p = o

    def _brace_init(self, ctx: _Ctx, o: int) -> bool:
        before = ctx.f.text[max(ctx.lo, o - 80):o].rstrip()
        return bool(re.search(r"(?:[\w>]|[=(,]|\breturn)$", before)) and not re.search(r"\b(?:else|do|try)$", before)

    @staticmethod
    def _ternary_branch(ctx: _Ctx, lo: int, p: int) -> bool:
        """A `?` at the top level of t[lo:p]: p is in a branch of a conditional expression."""
        t, pairs = ctx.f.text, ctx.f.pairs
        i = lo
        while i < p:
            c = t[i]
            if c in "([{":
                j = pairs.get(i, -1)
                if i < j < p:
                    i = j + 1
                    continue
                return False
            if c == "?":
                return True
            i += 1
        return False

    def _is_declaration(self, ctx: _Ctx, s: int, e: int) -> bool:
        """A new variable of the same name (a lambda parameter, a shadowing local)."""
        t = ctx.f.text
        before = t[max(ctx.lo, s - 80):s]
        after = t[e:e + 40]
        return bool(re.search(r"(?:\bauto|\bconst\s+auto|[\w>]\s*[&*]+|\bint|\bsize_t|\bvoid\s*\*)\s*$", before)) and \
            bool(re.match(r"\s*[,)=;]", after)) and not re.search(r"[=(,]\s*\*+\s*$", before) and \
            bool(re.search(r"[\w>]\s*[&*]*\s*$", before))

    def _fact(self, ctx: _Ctx, kind: str, detail: str) -> Fact:
        return Fact(kind, detail, ctx.d.where, ctx.depth)

    # ------------------------------------------------------------------ one expression

    def _idiom_reads(self, ctx: _Ctx, name: str, s: int, e: int) -> list[Fact]:
        out: list[Fact] = []
        t = ctx.f.text
        window_lo, window_hi = max(ctx.lo, s - 200), min(ctx.hi, e + 200)
        name_rx = r"\s*\.\s*".join(re.escape(p) for p in name.split("."))
        for idiom in self.idioms.reads:
            rx = re.compile(idiom.pattern.replace("{p}", name_rx))
            for m in rx.finditer(t, window_lo, window_hi):
                if m.start() <= s and e <= m.end():
                    out.append(self._fact(ctx, "read-as", idiom.read_as))
                    break
        return out

    def _expr(self, ctx: _Ctx, name: str, xs: int, xe: int, level: int) -> list[Fact]:
        """Classify the expression t[xs:xe], which denotes the traced pointer after `level` dereferences."""
        t = ctx.f.text
        pre = t[max(ctx.lo, xs - 200):xs]
        post = t[xe:min(ctx.hi, xe + 200)]
        facts: list[Fact] = []
        if level == 0:
            test = self._null_test(ctx, xs, xe, pre, post)
            if test is not None:
                return [test]
            rng = re.match(r"\s*,\s*" + re.escape(t[xs:xe].strip()) + r"\s*\+\s*([^,;(){}]+|[\w:]+\([^()]*\))\s*[,)}]",
                           post)
            if rng:
                facts.append(self._fact(ctx, "range", " ".join(rng.group(1).split())))
                facts.append(self._fact(ctx, "null-unsafe", "read as a range"))
        enc = self._enclosing(ctx, xs)
        # p + k: an offset pointer, the same level; classified as a whole
        plus = re.match(r"\s*\+\s*[\w.:]+(?:\s*\([^()]*\))?(?=\s*[,)\]};])", post)
        if plus and level == 0:
            return facts + self._expr(ctx, name, xs, xe + plus.end(), level)
        # wrappers: deref(x), DataCast(x), casts, parentheses
        if enc is not None and t[enc[0]] == "(" and t[enc[0] + 1:xs].strip() == "" and t[xe:enc[1]].strip() == "":
            open_, close = enc
            callee, cstart, ctemplate = self._callee(ctx, open_)
            if callee in self.idioms.deref:
                if level == 0:
                    facts.append(self._fact(ctx, "null-rejects", f"{callee}()"))
                return facts + self._expr(ctx, name, cstart, close + 1, level + 1)
            if callee in self.idioms.device_casts:
                facts.append(self._fact(ctx, "device", f"{callee}()"))
                return facts + self._expr(ctx, name, cstart, close + 1, level)
            if callee in ("static_cast", "reinterpret_cast", "const_cast") and ctemplate:
                cm = _CAST.search(t[cstart:open_])
                star = re.search(r"\*\s*\(?\s*$", t[max(ctx.lo, cstart - 8):cstart])
                if cm and star and level == 0:
                    ctype = self.idioms.scalar_types.get(cm.group(2), cm.group(2))
                    assigned = re.compile(r"\s*\)?\s*(?:[-+*/%|&^]|<<|>>)?=(?!=)").match(t, close + 1)
                    kind = "write" if assigned else "read-as"
                    facts.append(self._fact(ctx, kind, ctype if kind == "read-as" else f"*({cm.group(2)} *) ="))
                    return facts + [self._fact(ctx, "null-unsafe", "typed dereference")]
                if cm and re.compile(r"\s*\[").match(t, close + 1) and level == 0:
                    ctype = self.idioms.scalar_types.get(cm.group(2), cm.group(2))
                    return facts + [self._fact(ctx, "read-as", ctype), self._fact(ctx, "null-unsafe", "typed index")]
                return facts + self._expr(ctx, name, cstart, close + 1, level)
            if callee is None and not re.search(r"[\w)\]>]\s*$", t[max(ctx.lo, open_ - 4):open_]):
                return facts + self._expr(ctx, name, open_, close + 1, level)
        # C-style typed dereference: *(const float *)p
        cs = _CSTYLE.search(pre)
        if cs and level == 0 and re.search(r"\*\s*\(?\s*$", pre[:cs.start()]):
            ctype = self.idioms.scalar_types.get(cs.group(1), cs.group(1))
            return facts + [self._fact(ctx, "read-as", ctype), self._fact(ctx, "null-unsafe", "typed dereference")]
        # unary *
        star = re.search(r"(?:^|[^\w)\]\s]|\breturn|\belse)\s*\*\s*$", pre)
        if star is None:
            hdr = re.search(r"\)\s*\*\s*$", pre)
            if hdr:
                close_at = xs - len(pre) + hdr.start()
                open_at = ctx.f.pairs.get(close_at, -1)
                if 0 <= open_at < close_at and self._callee(ctx, open_at)[0] in ("if", "while", "for"):
                    star = hdr
        if star and level >= 0:
            if level == 0:
                facts.append(self._fact(ctx, "null-unsafe", "*p"))
            sstart = t.rfind("*", max(ctx.lo, xs - len(pre) + star.start()), xs)
            return facts + self._expr(ctx, name, sstart, xe, level + 1)
        # subscript
        sub = re.match(r"\s*\[", post)
        if sub:
            ob = xe + sub.end() - 1
            cb = ctx.f.pairs.get(ob, -1)
            if cb > ob:
                index = t[ob + 1:cb]
                k = re.match(r"\s*(\d+)\s*\*\s*\(?[A-Za-z_][\w.]*\)?\s*(?:\+.*)?$|\s*\(?[A-Za-z_][\w.]*\)?\s*\*\s*(\d+)"
                             r"\s*(?:\+.*)?$", index, re.S)
                if k and int(k.group(1) or k.group(2)) > 1:
                    facts.append(self._fact(ctx, "stride", str(int(k.group(1) or k.group(2)))))
                if level == 0:
                    facts.append(self._fact(ctx, "null-unsafe", "p[i]"))
                return facts + self._expr(ctx, name, xs, cb + 1, level + 1)
        # member access
        mem = re.match(r"\s*(->|\.)\s*[A-Za-z_]\w*", post)
        if mem and not re.match(r"\s*(?:->|\.)\s*[A-Za-z_]\w*\s*\(", post):
            deref_level = level + (1 if mem.group(1) == "->" else 0)
            if mem.group(1) == "->" and level == 0:
                facts.append(self._fact(ctx, "null-unsafe", "p->"))
            chain = _MEMBERS.match(post)
            rest = post[chain.end():] if chain else post
            if deref_level >= 1:
                if _ASSIGN.match(rest):
                    return facts + [self._fact(ctx, "write", "member assigned")]
                return facts + [self._fact(ctx, "read", "member")]
            return facts
        if mem and level >= 1:
            return facts + [self._fact(ctx, "read", "method call")]
        # assignment through the pointer
        if level >= 1 and _ASSIGN.match(post):
            rhs = post[_ASSIGN.match(post).end():]  # type: ignore[union-attr]
            if re.match(r"\s*&(?!&)", rhs):
                return facts + [self._fact(ctx, "write-address", "address of " + " ".join(rhs.split(";")[0].split())[1:60])]
            return facts + [self._fact(ctx, "write", "assigned")]
        # an alias: `auto& x = <expr>;`, `T* p = <expr>;`
        decl = re.search(r"(?:^|[;{}])\s*(?:const\s+)?(?:[\w:]+(?:\s*<[^;{}]*>)?)\s*(?:const\s*)?([&*]*)\s*([A-Za-z_]\w*)\s*=\s*$",
                         pre)
        if decl and re.match(r"\s*;", post):
            alias, ref = decl.group(2), decl.group(1)
            if "&" in ref or level == 0:
                return facts + self._occurrences(ctx, alias, level, xe)
            return facts + [self._fact(ctx, "read", "copied")]
        # stored in an object
        if level == 0 and re.search(r"(?:\.|->)\s*[A-Za-z_]\w*\s*=\s*$", pre) and re.match(r"\s*;", post):
            return facts + [self._fact(ctx, "stored", "assigned to a member")]
        if enc is not None:
            return facts + self._call_arg(ctx, name, xs, xe, level, enc)
        if level >= 1:
            return facts + [self._fact(ctx, "read", "value used")]
        return facts

    # ------------------------------------------------------------------ NULL tests

    def _null_test(self, ctx: _Ctx, xs: int, xe: int, pre: str, post: str) -> Fact | None:
        t = ctx.f.text
        m1 = re.match(r"\s*(==|!=)\s*(?:nullptr|NULL|0)\b(?!\.)", post)
        m2 = re.search(r"(?:\bnullptr|\bNULL)\s*(==|!=)\s*$", pre)
        bang = re.search(r"(?<![!=<>])!\s*$", pre) and not re.match(r"\s*(?:\(|\[|\.|->|=)", post)
        enc = self._enclosing(ctx, xs)
        truthy = False
        if not (m1 or m2 or bang) and not re.match(r"\s*(?:\(|\[|\.|->|\+|-|=[^=]|\*)", post):
            if re.match(r"\s*(?:&&|\|\||\?)", post) or re.search(r"(?:&&|\|\|)\s*$", pre):
                truthy = True
            elif enc is not None and t[enc[0]] == "(" and t[enc[0] + 1:xs].strip() == "" and t[xe:enc[1]].strip() == "":
                callee, _, _ = self._callee(ctx, enc[0])
                truthy = callee in ("if", "while")
        if not (m1 or m2 or bang or truthy):
            return None
        is_null = bool((m1 and m1.group(1) == "==") or (m2 and m2.group(1) == "==") or bang)
        test = t[xs:xe] + (" == NULL" if is_null else " != NULL")
        # the condition this test is part of
        pos = xs
        while True:
            enc = self._enclosing(ctx, pos)
            if enc is None or t[enc[0]] != "(":
                break
            callee, cstart, _ = self._callee(ctx, enc[0])
            open_, close = enc
            if callee in ("if", "while"):
                cond = t[open_ + 1:close]
                then_s, then_e = self._statement_after(ctx.f, close + 1, ctx.hi)
                then = t[then_s:then_e]
                else_m = _ELSE.match(t, then_e)
                other = ""
                if else_m:
                    es, ee = self._statement_after(ctx.f, else_m.end(), ctx.hi)
                    other = t[es:ee]
                if is_null and self._fails(then):
                    kind = "null-conditional" if "&&" in cond else "null-rejects"
                elif not is_null and self._fails(other):
                    kind = "null-conditional" if "||" in cond else "null-rejects"
                else:
                    kind = "null-accepts"
                return self._fact(ctx, kind, f"if({' '.join(test.split())})" + (" fails" if kind != "null-accepts"
                                                                                   else ""))
            if callee in self.idioms.throw_if and self._arg_index(ctx, enc, pos)[0] == 0:
                kind = ("null-conditional" if "&&" in t[open_ + 1:close].split(",")[0] else "null-rejects") \
                    if is_null else "null-accepts"
                return self._fact(ctx, kind, f"{callee}({' '.join(test.split())})")
            if callee in self.idioms.asserts and self._arg_index(ctx, enc, pos)[0] == 0:
                kind = "null-rejects" if not is_null else "null-accepts"
                return self._fact(ctx, kind, f"{callee}({' '.join(test.split())})")
            if callee is not None and callee not in KEYWORDS:
                break  # a test passed as an argument
            pos = open_
        return self._fact(ctx, "null-accepts", " ".join(test.split()))

    def _fails(self, text: str) -> bool:
        return bool(text) and self._throws is not None and bool(self._throws.search(text))

    @staticmethod
    def _statement_after(f: SourceFile, pos: int, hi: int) -> tuple[int, int]:
        t = f.text
        while pos < hi and t[pos].isspace():
            pos += 1
        if pos < hi and t[pos] == "{":
            end = f.pairs.get(pos, hi - 1)
            return pos, end + 1
        i = pos
        while i < hi:
            c = t[i]
            if c in "([{":
                j = f.pairs.get(i, -1)
                if j < i:
                    return pos, hi
                i = j + 1
                continue
            if c == ";":
                return pos, i + 1
            if c == "}":
                return pos, i
            i += 1
        return pos, hi

    # ------------------------------------------------------------------ brackets and calls

    def _enclosing(self, ctx: _Ctx, pos: int) -> tuple[int, int] | None:
        """The innermost bracket pair of the definition containing `pos`."""
        t, pairs = ctx.f.text, ctx.f.pairs
        i = pos - 1
        while i >= ctx.lo:
            c = t[i]
            if c in ")]}":
                j = pairs.get(i, -1)
                if 0 <= j < i:
                    i = j - 1
                    continue
            elif c in "([{":
                j = pairs.get(i, -1)
                if j > pos:
                    return i, j
            i -= 1
        return None

    def _callee(self, ctx: _Ctx, open_: int) -> tuple[str | None, int, str]:
        """(name, start of the call expression, template arguments) of the bracket at `open_`."""
        t = ctx.f.text
        lo = max(ctx.lo, open_ - 240)
        seg = t[lo:open_]
        m = re.search(r"([A-Za-z_~]\w*)\s*(<[^;(){}]*>)?\s*$", seg)
        if not m:
            return None, open_, ""
        name = m.group(1)
        start = lo + m.start()
        before = seg[:m.start()]
        if name in KEYWORDS and name not in ("static_cast", "reinterpret_cast", "const_cast"):
            return name, start, ""
        # qualified names: ns::f, obj.f, obj->f
        q = re.search(r"((?:[A-Za-z_]\w*\s*::\s*)+)$", before)
        if q:
            start = lo + q.start()
            before = seg[:q.start()]
        decl = re.search(r"([A-Za-z_]\w*)\s*(<[^;(){}]*>)?\s*[&*]*\s*$", before)
        if t[open_] == "{" or decl:
            if decl and decl.group(1) not in _NOT_DECL and decl.group(1) not in KEYWORDS and \
                    not re.search(r"(?:\.|->)\s*$", before[:decl.start()]):
                return decl.group(1), start, ""  # `Type var(args)`: Type's constructor
            if decl and decl.group(1) == "new":
                return name, start, m.group(2) or ""
            if t[open_] == "{" and re.search(r"[=(,{]\s*$|return\s*$", before) and not m.group(2):
                return name, start, ""  # `Type{args}`
            if t[open_] == "{":
                return None, open_, ""
        return name, start, m.group(2) or ""

    def _arg_index(self, ctx: _Ctx, enc: tuple[int, int], pos: int) -> tuple[int, int, tuple[int, int]]:
        """(index of the argument holding `pos`, number of arguments, its span)."""
        open_, close = enc
        inner = ctx.f.text[open_ + 1:close]
        spans = split_args(inner)
        for i, (a, b) in enumerate(spans):
            if open_ + 1 + a <= pos < open_ + 1 + b + 1:
                return i, len(spans), (open_ + 1 + a, open_ + 1 + b)
        return -1, len(spans), (pos, pos)

    def _call_arg(self, ctx: _Ctx, name: str, xs: int, xe: int, level: int, enc: tuple[int, int]) -> list[Fact]:
        t = ctx.f.text
        open_, close = enc
        callee, cstart, _ = self._callee(ctx, open_)
        if callee is None or callee in KEYWORDS:
            return [self._fact(ctx, "read", "value used")] if level >= 1 else []
        index, nargs, (a, b) = self._arg_index(ctx, enc, xs)
        whole = t[a:b].strip() == t[xs:xe].strip()
        if callee in _STD_ALGOS and index in _STD_ALGOS[callee]:
            how = _STD_ALGOS[callee][index]
            if level == 0:
                used = [self._fact(ctx, "write" if how == "write" else "read", f"std::{callee} "
                                   + ("destination" if how == "write" else "source"))]
                if callee in ("copy_n", "fill_n") and index == 0 and nargs > 1:
                    na, nb = split_args(t[open_ + 1:close])[1]
                    used.append(self._fact(ctx, "range", " ".join(t[open_ + 1 + na:open_ + 1 + nb].split())))
                return used + [self._fact(ctx, "null-unsafe", f"std::{callee}")]
            return []
        if not whole or index < 0:
            return [self._fact(ctx, "read", "value used")] if level >= 1 else []
        if t[open_] == "(" and _ASSIGN_ONLY.match(t, close + 1) and callee in self.idioms.tie_deref:
            return [self._fact(ctx, "null-rejects", f"{callee}()"), self._fact(ctx, "write", f"{callee}() =")] \
                if level == 0 else []
        if callee in self.idioms.tie_deref:
            return [self._fact(ctx, "null-rejects", f"{callee}()"), self._fact(ctx, "read", f"{callee}()")] \
                if level == 0 else []
        if callee == "tie" and level >= 1:  # std::tie(*a, *b) = ...
            assigned = t[open_] == "(" and _ASSIGN_ONLY.match(t, close + 1)
            return [self._fact(ctx, "write" if assigned else "read", "std::tie")]
        if callee in self.idioms.array_views and index == 0 and nargs >= 2 and level == 0:
            na, nb = split_args(t[open_ + 1:close])[1]
            return [self._fact(ctx, "range", " ".join(t[open_ + 1 + na:open_ + 1 + nb].split())),
                    self._fact(ctx, "read", f"{callee} (a view of the array)")]
        if callee in (*self.idioms.deref, *self.idioms.device_casts, *self.idioms.tie_deref, *self.idioms.throw_if,
                      *self.idioms.asserts):
            return []
        if ctx.depth >= self.max_depth:
            return []
        candidates = self._receiver_filter(ctx, cstart, self.source.lookup(callee, nargs))
        if not candidates or len(candidates) > self.max_candidates:
            return [self._fact(ctx, "read", "value used")] if level >= 1 else []
        argmap = self._argmap(ctx, enc)
        facts: list[Fact] = []
        for cand in candidates:
            if index >= len(cand.params):
                continue
            p = cand.params[index]
            if p.name is None:
                facts.append(Fact("unused", f"ignored by {cand.qualname}", cand.where, ctx.depth + 1))
                continue
            if level >= 1 and not p.mutable_ref:
                facts.append(self._fact(ctx, "read", f"passed by value to {callee}"))
                continue
            sub = self.trace(cand, p.name, level, ctx.depth + 1)
            names = {q.name: argmap[i] for i, q in enumerate(cand.params) if q.name and i < len(argmap)}
            facts += [_rename(f, names) for f in sub]
        return facts

    def _receiver_filter(self, ctx: _Ctx, cstart: int, candidates: list[CppDef]) -> list[CppDef]:
        """Of several candidates: for `ns::f(...)` those in namespace/directory ns; for `obj.f(...)` those whose
        class names the receiver's type."""
        t = ctx.f.text
        if len(candidates) < 2:
            return candidates
        qual = re.compile(r"((?:[A-Za-z_]\w*\s*::\s*)+)").match(t, cstart)
        if qual:
            parts = [q.strip() for q in qual.group(1).split("::") if q.strip()]
            parts = [q for q in parts if q not in self.idioms.root_namespaces and q != "std"]
            if parts:  # the innermost namespace or class: in the definition's qualified name or its directories
                inner = parts[-1]
                kept = [d for d in candidates
                        if inner in d.qualname.split("::")[:-1] or inner in d.path.split("/")[:-1]]
                if kept:
                    return kept
        classes = {d.qualname.split("::")[-2] for d in candidates if "::" in d.qualname}
        if not classes:
            return candidates
        head = t[:cstart].rstrip()
        if not head.endswith((".", "->")) or len(head) <= ctx.lo:
            return candidates
        head = head[:-2] if head.endswith("->") else head[:-1]
        head = head.rstrip()
        recv = ""
        if head.endswith(")"):
            open_ = ctx.f.pairs.get(len(head) - 1, -1)
            if 0 <= open_ < len(head):
                recv = t[max(ctx.lo, open_ - 60):len(head)]
        else:
            m = re.search(r"[A-Za-z_]\w*$", head[-200:])
            recv = m.group(0) if m else ""
        types: list[str] = []
        for ident in re.findall(r"[A-Za-z_]\w*", recv):
            types += [p.type for p in ctx.d.params if p.name == ident]
            decl = re.search(r"([A-Za-z_][\w:]*)\s*(?:<[^;{}]*>)?\s*[&*]*\s*\b" + ident + r"\s*[=;({]",
                             t[ctx.lo:cstart])
            if decl and decl.group(1) not in ("auto", "return"):
                types.append(decl.group(1))
            elif decl:
                rhs = re.search(r"\b" + ident + r"\s*=\s*([^;]*)", t[ctx.lo:cstart])
                if rhs:
                    types.append(rhs.group(1))  # e.g. dynamic_cast<Cls&>(...)
                    for inner in re.findall(r"[A-Za-z_]\w*", rhs.group(1)):
                        types += [p.type for p in ctx.d.params if p.name == inner]
        low = " ".join(types).lower()
        kept = [d for d in candidates if "::" in d.qualname and d.qualname.split("::")[-2].lower() in low]
        return kept or candidates

    def _argmap(self, ctx: _Ctx, enc: tuple[int, int]) -> list[str]:
        open_, close = enc
        inner = ctx.f.text[open_ + 1:close]
        return [" ".join(inner[a:b].split()) for a, b in split_args(inner)]


def _collapse_null(facts: list[Fact]) -> list[Fact]:
    """Keep one NULL event: the first unconditional one (what NULL meets first), else the first conditional one."""
    first = first_of(tuple(facts), ("null-accepts", "null-rejects", "null-unsafe")) or \
        first_of(tuple(facts), ("null-conditional",))
    return [f for f in facts if f.kind not in _NULL_EVENTS or f is first]


def _rename(f: Fact, names: dict[str, str]) -> Fact:
    if f.kind != "range" or not names:
        return f

    def sub(m: re.Match[str]) -> str:
        v = names.get(m.group(0))
        return v if v and re.fullmatch(r"[\w.:]+", v) else (f"({v})" if v else m.group(0))

    return replace(f, detail=re.sub(r"\b[A-Za-z_]\w*\b", sub, f.detail))


def first_of(facts: tuple[Fact, ...], kinds: tuple[str, ...]) -> Fact | None:
    """The first fact of one of `kinds`, or None."""
    return next((f for f in facts if f.kind in kinds), None)
