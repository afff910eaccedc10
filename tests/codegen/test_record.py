"""codegen/base/record.py: a record class behaves as the standard library's frozen dataclass of the same body.

The class of cases: random field lists (with and without defaults, default factories, keyword-only fields, a
base record's fields), each made into a record class and into `dataclasses.dataclass(frozen=True)`, then
compared on every behaviour the generator uses: construction (and its errors), fields, equality, hashing,
repr, replace, asdict, pickling, copying, pattern matching and refused assignment.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
import sys
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miogen.base import record
from miogen.base.record import FrozenInstanceError, field, fields, is_frozen, is_record, replace

_NAMES = st.sampled_from(["a", "b", "c", "d", "e", "f"])
#: a field: (name, kind: plain / default / factory, keyword-only)
_FIELD = st.tuples(_NAMES, st.sampled_from(["plain", "default", "factory"]), st.booleans())


def _both(specs: list[tuple[str, str, bool]], base: tuple[type, type] | None = None) -> tuple[type, type]:
    """(record class, frozen dataclass) of one body, the same base's two makes as bases; a body that one refuses
    the other refuses with the same error."""
    made: list[Any] = []
    for kind in ("record", "dataclass"):
        mod = record if kind == "record" else dataclasses
        ns: dict[str, Any] = {"__annotations__": {}, "__qualname__": "R", "__module__": __name__}
        for name, how, kw in specs:
            ns["__annotations__"][name] = "int"
            if how == "default":
                ns[name] = mod.field(default=len(name), kw_only=kw)  # type: ignore[attr-defined]
            elif how == "factory":
                ns[name] = mod.field(default_factory=lambda: [1, 2], kw_only=kw)  # type: ignore[attr-defined]
            elif kw:
                ns[name] = mod.field(kw_only=True)  # type: ignore[attr-defined]
        bases = () if base is None else (base[0] if kind == "record" else base[1],)
        cls = type("R", bases, ns)
        made.append(_outcome(lambda: record.record(cls) if kind == "record" else dataclasses.dataclass(frozen=True)(cls)))
    assert made[0][0] == made[1][0]
    if made[0][0] != "ok":
        raise TypeError(made[0][0])
    return made[0][1], made[1][1]


def _outcome(make: Any) -> Any:
    try:
        return ("ok", make())
    except (TypeError, ValueError) as exc:
        return (type(exc).__name__,)


def _unique(specs: list[tuple[str, str, bool]]) -> list[tuple[str, str, bool]]:
    seen: dict[str, tuple[str, str, bool]] = {}
    for s in specs:
        seen.setdefault(s[0], s)
    return list(seen.values())


@settings(max_examples=150, deadline=None)
@given(st.lists(_FIELD, max_size=5).map(_unique), st.lists(_FIELD, max_size=3).map(_unique),
       st.lists(st.integers(-3, 3), max_size=6), st.data())
def test_a_record_class_is_the_frozen_dataclass_of_its_body(base_specs: list[tuple[str, str, bool]],
                                                             specs: list[tuple[str, str, bool]], args: list[int],
                                                             data: st.DataObject) -> None:
    made = _outcome(lambda: _both(base_specs))
    if made[0] != "ok":  # a body dataclasses refuses (a field without a default after one with): refused alike
        return
    base = made[1]
    made = _outcome(lambda: _both(specs, base))
    if made[0] != "ok":
        return
    rec, dc = made[1]
    assert [(f.name, f.kw_only) for f in fields(rec)] == [(f.name, f.kw_only) for f in dataclasses.fields(dc)]
    assert rec.__match_args__ == dc.__match_args__
    names = [f.name for f in fields(rec)]
    keywords = {n: v for n, v in zip(names, args) if data.draw(st.booleans())}
    positional = args[:len(args) - len(keywords)]
    mine, theirs = _outcome(lambda: rec(*positional, **keywords)), _outcome(lambda: dc(*positional, **keywords))
    assert mine[0] == theirs[0]
    if mine[0] != "ok":
        return
    r, d = mine[1], theirs[1]
    assert repr(r) == repr(d)
    assert record.asdict(r) == dataclasses.asdict(d)
    assert r == rec(**record.asdict(r)) and not r == d and r != d
    hashable = all(isinstance(getattr(d, n), int) for n in names)
    if hashable:
        assert hash(r) == hash(d)
    else:
        with pytest.raises(TypeError):
            hash(r)
    if names:
        name = data.draw(st.sampled_from(names))
        assert replace(r, **{name: 7}) == rec(**{**record.asdict(r), name: 7})
        assert replace(r, **{name: 7}) != r  # no field's value here is 7: every field takes part in equality
        assert repr(replace(r, **{name: 7})) == repr(dataclasses.replace(d, **{name: 7}))
        with pytest.raises(FrozenInstanceError):
            setattr(r, name, 1)
        with pytest.raises(FrozenInstanceError):
            delattr(r, name)
    with pytest.raises(TypeError):
        replace(r, nonesuch=1)
    assert copy.deepcopy(r) == r and copy.copy(r) == r


@record.record
class _Point:
    """A module-level record (pickle finds classes by name)."""

    x: int
    y: tuple[int, ...] = (0,)
    scale: ClassVar[int] = 3

    def __repr__(self) -> str:
        return f"<{self.x}>"


@record.record(kw_only=True)
class _Named:
    name: str
    size: int = field(default=1, metadata={"key": "bytes"})


@record.record
class _Tagged(_Point):
    tag: str = "t"


@record.record(frozen=False)
class _Working:
    items: list[int] = field(default_factory=list)


def test_what_a_body_says_is_kept() -> None:
    """A method the body defines stays (here __repr__); ClassVar annotations are not fields; metadata is read-only;
    keyword-only fields take no position; a subclass's fields follow its base's."""
    p = _Point(1)
    assert repr(p) == "<1>" and _Point.scale == 3 and [f.name for f in fields(_Point)] == ["x", "y"]
    assert fields(_Named)[1].metadata["key"] == "bytes"
    with pytest.raises(TypeError):
        fields(_Named)[1].metadata["key"] = "other"  # type: ignore[index]
    with pytest.raises(TypeError):
        _Named("n")  # type: ignore[misc]
    assert _Named(name="n") == _Named(name="n", size=1)
    assert [f.name for f in fields(_Tagged)] == ["x", "y", "tag"] and _Tagged(1, tag="u").tag == "u"
    assert pickle.loads(pickle.dumps(_Tagged(2, (3,)))) == _Tagged(2, (3,))
    match _Tagged(5, (6,)):
        case _Tagged(x, y):
            assert (x, y) == (5, (6,))


def test_a_body_with_its_own_eq_still_hashes_its_fields_as_a_dataclass_does() -> None:
    """Defining __eq__ sets __hash__ to None in the body: not a hash of its own, so the fields' hash is added
    (a body's own __hash__ is kept)."""
    def body(ns: dict[str, Any]) -> None:
        ns["__annotations__"] = {"x": "int"}
        ns["__eq__"] = lambda self, other: True

    rec = record.record(type("E", (), {"__module__": __name__, **_ns(body)}))
    dc = dataclasses.dataclass(frozen=True)(type("E", (), {"__module__": __name__, **_ns(body)}))
    assert hash(rec(3)) == hash(dc(3)) and rec(1) == rec(2)
    own = record.record(type("H", (), {"__annotations__": {"x": "int"}, "__hash__": lambda self: 5}))
    assert hash(own(1)) == 5


def _ns(fill: Any) -> dict[str, Any]:
    ns: dict[str, Any] = {}
    fill(ns)
    return ns


def test_asdict_descends_into_records_inside_containers() -> None:
    inner = _Point(1, (2,))
    outer = _Working([1])
    nested = record.record(type("N", (), {"__annotations__": {"p": "object", "q": "object"}}))(
        inner, {"k": (inner, [outer])})
    assert record.asdict(nested) == {"p": {"x": 1, "y": (2,)}, "q": {"k": ({"x": 1, "y": (2,)}, [{"items": [1]}])}}


def test_a_mutable_record_is_unhashable_and_takes_assignment() -> None:
    w = _Working()
    w.items = [1]
    assert w == _Working([1]) and _Working().items is not _Working().items
    assert _Working.__hash__ is None and not is_frozen(w) and is_record(w)
    assert is_frozen(_Point) and is_frozen(_Point(1)) and not is_record(object()) and not is_frozen(int)


def test_a_mutable_default_is_refused_as_dataclasses_refuses_it() -> None:
    with pytest.raises(ValueError, match="default_factory"):
        @record.record
        class Bad:
            items: list[int] = []  # noqa: RUF012
    with pytest.raises(ValueError):
        field(default=1, default_factory=int)
    with pytest.raises(TypeError):
        fields(int)
    with pytest.raises(TypeError):
        replace(object())
    for name in ("self", "_set", "_factory_x"):  # what the compiled __init__ keeps for itself
        with pytest.raises(TypeError, match="rename"):
            record.record(type("Named", (), {"__annotations__": {name: "int"}}))


def test_the_module_imports_neither_dataclasses_nor_inspect() -> None:
    """The point of the module (see its doc): run in a fresh interpreter, making a record imports neither."""
    import subprocess

    code = ("import sys\nfrom miogen.base.record import record\n@record\nclass A:\n    x: int = 0\n"
            "A(1) == A(1)\nprint('dataclasses' in sys.modules, 'inspect' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.split() == ["False", "False"]
