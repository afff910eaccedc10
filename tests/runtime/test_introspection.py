"""Python's conventions without a library: hasattr, getattr with a default, dir, help, inspect, create_autospec and
`from miopen import *` are answered from the generated modules (the newest committed release that has a name),
never by loading or searching for a library; an unknown name is an AttributeError. Run in a process of its own,
where no other test has loaded a library."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import Libs

_SCRIPT = r'''
import ctypes, ctypes.util

searched = []  # every attempt to open or find a library, from before `import miopen`
_init = ctypes.CDLL.__init__


def _record_init(self, name, *args, **kwargs):
    searched.append(("CDLL", name))
    return _init(self, name, *args, **kwargs)


ctypes.CDLL.__init__ = _record_init
_find = ctypes.util.find_library
ctypes.util.find_library = lambda name: searched.append(("find_library", name)) or _find(name)

import inspect, pydoc
from unittest import mock

import miopen
from miopen._generated import _releases, _state, _support

_candidates, _open = _support._candidates, _support._open
_support._candidates = lambda: searched.append("_candidates") or _candidates()
_support._open = lambda path: searched.append(("_open", path)) or _open(path)
MISSING = object()

# dir, hasattr, getattr with a default: every listed name resolves
for module in (miopen, miopen.api, miopen.raw):
    names = dir(module)
    for name in names:
        if not name.startswith("__"):
            assert hasattr(module, name) and getattr(module, name, MISSING) is not MISSING, (module, name)
assert {"create", "DataType", "Handle", "tensor_descriptor", "load_library", "hip"} <= set(dir(miopen))
assert "miopenCreate" in dir(miopen.raw) and "create" not in dir(miopen.raw)
assert miopen.MIOPEN_VERSION is None  # no release is bound
try:
    miopen.no_such_name
except AttributeError as exc:
    assert "no_such_name is in no MIOpen release these bindings have" in str(exc), exc
else:
    raise AssertionError("an unknown name resolved")

# help (pydoc, rendered to a string), inspect
text = pydoc.render_doc(miopen, renderer=pydoc.plaintext)
assert "create_tensor_descriptor" in text and "TensorDescriptor" in text
assert list(inspect.signature(miopen.set_4d_tensor_descriptor).parameters) == [
    "tensor_desc", "data_type", "n", "c", "h", "w"]
assert inspect.signature(miopen.create).return_annotation == "Handle"
assert "miopenCreateTensorDescriptor" in inspect.getdoc(miopen.create_tensor_descriptor)
members = dict(inspect.getmembers(miopen))
assert callable(members["create"]) and members["Handle"] is miopen.Handle
for obj in (miopen.api, miopen.raw, miopen.TensorDescriptor, miopen.DataType, miopen.ConvolutionMode):
    assert inspect.getmembers(obj)
inspect.signature(miopen.TensorDescriptor.from_address)

# create_autospec of the package and of functions: the signatures are the generated ones
spec = mock.create_autospec(miopen)
spec.set_4d_tensor_descriptor(None, 1, 1, 2, 3, 4)
spec.set_4d_tensor_descriptor.assert_called_once_with(None, 1, 1, 2, 3, 4)
fn = mock.create_autospec(miopen.set_4d_tensor_descriptor)
fn(tensor_desc=None, data_type=1, n=1, c=2, h=3, w=4)
for wrong in ((None,), (None, 1, 1, 2, 3, 4, 5)):
    try:
        fn(*wrong)
    except TypeError:
        pass
    else:
        raise AssertionError(f"autospec accepted {wrong}")
mock.create_autospec(miopen.raw.miopenCreate)(None)

# from miopen import *
ns = {}
exec("from miopen import *", ns)
assert {"create", "Handle", "DataType", "MIOpenError", "with_miopen_state"} <= set(ns)

# hasattr, getattr with a default and dir agree, over every release's names and random identifiers
from hypothesis import given, settings, strategies as st

known = sorted({name.split(".")[0] for name in _releases.HAVE})
identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,24}", fullmatch=True)


@settings(max_examples=400, database=None, deadline=None)
@given(st.sampled_from([miopen, miopen.api, miopen.raw]), st.one_of(st.sampled_from(known), identifiers))
def consistent(module, name):
    if name.startswith("__"):
        return
    has = hasattr(module, name)
    got = getattr(module, name, MISSING)
    assert has == (got is not MISSING) == (name in dir(module)), (module.__name__, name, has)


consistent()

assert searched == [], searched
assert _state.lib is None and _state.bound is None
assert miopen.hip.loaded_hip_library() is None
print("ok")
'''


@pytest.mark.long
def test_introspection_never_loads_or_searches_a_library(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("MIOPEN_LIBRARY", "MIOGEN_HIP_LIBRARY", "LD_LIBRARY_PATH")}
    env.update(ROCM_PATH=str(tmp_path / "nowhere"), PYTHONHASHSEED="0")
    r = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, env=env, cwd=tmp_path,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "ok"


def test_names_agree_while_a_release_is_bound(libs: Libs) -> None:
    """With a library loaded the same conventions hold for the bound release's names."""
    import miopen
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from miopen._generated import _releases

    missing = object()
    known = sorted({name.split(".")[0] for name in _releases.HAVE})

    @settings(max_examples=200, database=None, deadline=None)
    @given(st.sampled_from([miopen, miopen.api, miopen.raw]),
           st.one_of(st.sampled_from(known), st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,24}", fullmatch=True)))
    def consistent(module: object, name: str) -> None:
        if name.startswith("__"):
            return
        has = hasattr(module, name)
        assert has == (getattr(module, name, missing) is not missing)
        if module is miopen:  # the facades of `api` and `raw` also reach the layer's helpers, listed or not
            assert has == (name in dir(module)), name

    consistent()
    assert miopen.MIOPEN_VERSION == miopen.bound_release()
