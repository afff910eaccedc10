"""Reliability (issue 29, the runtime side): shared descriptors cannot be changed, device buffers are checked
against the extent their descriptor implies, a forked child never hangs, pools do not grow with dead contexts,
paths are bytes. Against the stub libraries; the kernels' side is in tests/real/ocl/checks_reliability.py."""

from __future__ import annotations

import inspect

import pytest

from .conftest import Libs


# ------------------------------------------------------------------ frozen descriptors


def _c_name(fn: object) -> str:
    return (getattr(fn, "__doc__", "") or "").split("(", 1)[0].strip()


def _setters_of(base: type) -> list[tuple[str, object]]:
    """Every typed-API function that sets what its first argument, a `base` descriptor, describes."""
    from miopen._generated import api
    from miopen._generated._convert import _is_setter

    out = []
    for name in sorted(dir(api)):
        fn = getattr(api, name)
        if not inspect.isfunction(fn) or not _is_setter(_c_name(fn)):
            continue
        params = list(inspect.signature(fn).parameters.values())
        if params and str(params[0].annotation).split(" |")[0] == base.__name__:
            out.append((name, fn))
    return out


def _frozen_objects() -> list[object]:
    """One object of each kind the runtime caches and shares."""
    from miopen import descriptors as d

    return [d.tensor_descriptor("float32", [2, 3, 4, 5]), d.convolution_descriptor([1, 1], [1, 1], [1, 1]),
            d.cached_activation_descriptor(d.api.ActivationMode(3), 0.0, 0.0, 0.0),
            d.cached_pooling_descriptor(d.api.PoolingMode(0), (2, 2), (0, 0), (2, 2))]


def test_every_setter_refuses_every_shared_descriptor(libs: Libs) -> None:
    """For each cached descriptor kind, every Set/Init function of the typed API whose first argument is that kind
    refuses it (ValueError naming the function and parameter) before any library call; readers still take it."""
    from miopen import descriptors

    objs = _frozen_objects()
    assert {type(o) for o in objs} == set(descriptors.FROZEN_KINDS)
    tried = 0
    for obj in objs:
        base = type(obj).__mro__[1]
        setters = _setters_of(base)
        assert setters, f"no setter of {base.__name__} found"
        for name, fn in setters:
            first = next(iter(inspect.signature(fn).parameters))  # type: ignore[arg-type]
            nargs = len(inspect.signature(fn).parameters) - 1  # type: ignore[arg-type]
            libs.reset()
            with pytest.raises(ValueError, match=rf"^{_c_name(fn)}: {first} is a shared descriptor"):
                fn(obj, *[None] * nargs)  # type: ignore[operator]
            assert libs.calls() == [], f"{name} reached the library"
            tried += 1
        assert not obj.closed  # type: ignore[attr-defined]
    assert tried >= 8
    from miopen._generated import api

    assert isinstance(api.get_tensor_descriptor_size(objs[0]), int)  # type: ignore[arg-type]  # a reader takes it
    with api.create_tensor_descriptor() as own:  # a descriptor of one's own is still set freely
        api.set_tensor_descriptor(own, api.DataType.miopenFloat, [2, 3], [3, 1])


def test_tensor_desc_of_a_tensor_cannot_be_rewritten(libs: Libs) -> None:
    """The issue's example: set_tensor_descriptor(t.desc, ...) would rewrite every later tensor of that shape."""
    import miopen
    from miopen.tensor import Tensor

    t = Tensor.make(0x1000, (1, 1, 8, 8), "float32")
    with pytest.raises(ValueError, match="tensor_desc is a shared descriptor"):
        miopen.set_tensor_descriptor(t.desc, miopen.DataType.miopenFloat, [1, 1, 4, 4], [16, 16, 4, 1])
    assert Tensor.make(0x1000, (1, 1, 8, 8), "float32").desc is t.desc
