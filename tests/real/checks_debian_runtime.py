"""The handwritten runtime against the real Debian-built MIOpen 3.x releases (tests/real/library/test_real_debian.py), with the
stand-in GPU (one device): version policies, the handle pool, with_miopen_state, has_feature for every feature,
and miopen.caffe2's wrappers. Expectations are computed here from the real library's own version (read raw),
the committed header spec of the bound release, and MIOpen's formulas; nothing assumes one release.
"""

from __future__ import annotations

import ctypes
import threading
import warnings
from pathlib import Path
from typing import Any

import miopen
from miopen import handles, state, version
from miopen.errors import MIOpenVersionWarning

from . import trace
from .common import _raw_lib, raw_fn


def library_version() -> version.Version:
    """miopenGetVersion called raw (not through the runtime's cache)."""
    parts = [ctypes.c_size_t(), ctypes.c_size_t(), ctypes.c_size_t()]
    assert raw_fn("miopenGetVersion")(*(ctypes.byref(p) for p in parts)) == 0
    return version.Version(*(int(p.value) for p in parts))


def version_policies() -> dict[str, str]:
    """The library is bound to its own committed release: every policy passes it without a warning, the version
    the runtime reports is the library's, and MIOPEN_SKIP_VERSION_CHECK=1 makes even 'strict' pass silently."""
    import os

    real = library_version()
    assert version.runtime_version() == real and version.compiled_version() == real
    out = {}
    for policy in ("compatible", "strict", "off"):
        version.reset_version_cache()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = version.check_miopen_versions(policy)  # type: ignore[arg-type]
        assert got == real and not [w for w in caught if issubclass(w.category, MIOpenVersionWarning)], policy
        out[policy] = "ok"
    os.environ[version.SKIP_ENV] = "1"
    try:
        version.reset_version_cache()
        assert version.check_miopen_versions("strict") == real
    finally:
        del os.environ[version.SKIP_ENV]
        version.reset_version_cache()
    out["version"] = str(real)
    return out


def handle_pool() -> dict[str, int]:
    """inline_miopen_handle: one real handle per thread and device, rebound to a new stream once
    (miopenSetStream), another thread another handle, the stand-in's one device only; closing the pool destroys
    each handle once."""
    version.reset_version_cache()
    pool = handles.handle_pool()
    pool.close()
    version.set_version_policy("strict")
    try:
        m = trace.mark()
        h0 = handles.inline_miopen_handle(None, 0)
        assert handles.inline_miopen_handle(None, 0) is h0 and trace.count("miopenCreate", m) == 1
        m = trace.mark()
        assert handles.inline_miopen_handle(0x1234, 0) is h0
        handles.inline_miopen_handle(0x1234, 0)
        assert trace.count("miopenSetStream", m) == 1
        other: list[Any] = []
        t = threading.Thread(target=lambda: other.append(handles.inline_miopen_handle(None, 0)))
        t.start()
        t.join()
        assert other and other[0] is not h0
        created = pool.size
        m = trace.mark()
        pool.close()
        assert trace.count("miopenDestroy", m) == created == 2 and h0.closed
    finally:
        version.set_version_policy("compatible")
    return {"handles": created}


def miopen_state() -> dict[str, Any]:
    """with_miopen_state: a real handle on a stream of its own per state; the same state is the same handle
    across blocks; entering it again in the same thread is a RuntimeError naming the state; another state_idx is
    another handle; the handle answers MIOpen's questions (its stream is the state's)."""
    with state.with_miopen_state(0) as st:
        h = st.handle
        assert miopen.get_stream(h) == st.stream.handle
        try:
            with state.with_miopen_state(0):
                pass
        except RuntimeError as exc:
            assert "state_idx" in str(exc)
        else:
            raise AssertionError("re-entering state 0 was allowed")
        with state.with_miopen_state(1) as st1:
            assert st1.handle is not h
    with state.with_miopen_state(0) as again:
        assert again.handle is h
    return {"states": 2}


def declared_functions(spec_text: str) -> set[str]:
    """The function names a committed spec declares (its `- name: miopenX` entries under functions)."""
    names = set()
    for line in spec_text.splitlines():
        stripped = line.strip()
        if stripped.startswith("name: miopen") or stripped.startswith("- name: miopen"):
            names.add(stripped.split("name:", 1)[1].strip().strip("'\""))
    return names


def features(spec_path: str) -> dict[str, bool]:
    """has_feature for every feature: True exactly when the bound release's header declares all its functions,
    the library exports them, and the release is at least the feature's (runtime/version.py FEATURES: the
    minimum versions come from MIOpen's release notes)."""
    declared = declared_functions(Path(spec_path).read_text())
    lib = _raw_lib()
    real = library_version()
    out = {}
    for name, (symbols, minimum) in version.FEATURES.items():
        want = all(s in declared and hasattr(lib, s) for s in symbols) and real >= minimum
        got = version.has_feature(name)
        assert got == want, (name, got, want)
        out[name] = got
    return out


def caffe2_wrappers() -> dict[str, Any]:
    """miopen.caffe2: each type wrapper's data type reaches MIOpen as itself (a tensor of it has itemsize x
    elements bytes); the tensor descriptor wrapper re-sets its descriptor only on change and its byte count is
    MIOpen's; an LSTM's parameter bytes through the caffe2 RNN op are MIOpen's (src/rnn.cpp paramsCal)."""
    from miopen import caffe2
    from miopen.caffe2 import common as c2

    out: dict[str, Any] = {}
    for wrapper in (c2.miopenTypeWrapperF32, c2.miopenTypeWrapperHalf, c2.miopenTypeWrapperBFloat16,
                    c2.miopenTypeWrapperF64):
        d = miopen.create_tensor_descriptor()
        miopen.set_tensor_descriptor(d, wrapper.type, [2, 3, 5], [15, 5, 1])
        assert miopen.get_tensor_num_bytes(d) == 30 * wrapper.itemsize(), wrapper
        out[wrapper.__name__] = (wrapper.type.name, wrapper.itemsize())
    w = c2.miopenTensorDescWrapper()
    desc, changed = w.descriptor("float32", (2, 4, 6, 8))
    assert changed and w.nbytes == miopen.get_tensor_num_bytes(desc) == 4 * 2 * 4 * 6 * 8
    assert w.descriptor("float32", (2, 4, 6, 8)) == (desc, False)
    desc2, changed = w.descriptor_for_order("NHWC", (2, 6, 8, 4), "float16")
    got = miopen.get_tensor_descriptor(desc2)
    assert changed and (got.dims_a, got.strides_a) == ([2, 4, 6, 8], [192, 1, 32, 4])
    assert w.nbytes == miopen.get_tensor_num_bytes(desc2) == 2 * 2 * 4 * 6 * 8
    w.close()
    from miopen.ops.rnn import RNN

    hidden, layers, inp = 32, 2, 16
    rnn = RNN(inp, hidden, layers, mode="lstm")
    want = 4 * (4 * (inp * hidden + hidden * hidden) + 4 * (2 * hidden * hidden) + 2 * layers * 4 * hidden)
    assert rnn.params_size() == want, (rnn.params_size(), want)
    out["lstm params bytes"] = want
    assert caffe2 is not None
    return out
