"""Layout probe and call-through: the ctypes layer agrees with gcc, and every wrapper reaches C intact."""

from __future__ import annotations

import ctypes
from pathlib import Path

from miogen.prove import callthrough, cxx, layout

from ..conftest import Built
from ..helpers import FIXTURE_HEADER, target


def _plans(built: Built) -> dict[str, tuple[str, list[tuple[str, str]], list[str]]]:
    return {
        f.c_name: (f.py_name, [(p.c_name, p.py) for p in f.params], [p.c_name for p in f.params if p.out])
        for f in built.plan.functions
    }


def test_layout_matches_gcc(built: Built, tmp_path: Path) -> None:
    probe = cxx.compile_cpp(layout.probe_source(built.spec, FIXTURE_HEADER, "probe"), tmp_path / "probe", target(), False)
    assert layout.check_layout(probe, built.pkg.raw, built.spec) == []
    out = __import__("subprocess").run([str(probe)], capture_output=True, text=True, check=True).stdout
    assert '"record": "miopenConvAlgoPerf_t", "size": 16, "align": 8' in out
    assert '"field": "bwd_data_algo", "offset": 0' in out
    assert '"constant": "miopenTensorArgumentIsScalar", "value": 2147483648' in out
    assert ctypes.sizeof(built.pkg.raw.miopenConvSolution_t) == 32


def test_layout_check_catches_a_wrong_ctypes_layer(built: Built, tmp_path: Path) -> None:
    probe = cxx.compile_cpp(layout.probe_source(built.spec, FIXTURE_HEADER, "probe"), tmp_path / "probe", target(), False)

    class WrongRaw:
        def __getattr__(self, name: str) -> object:
            return getattr(built.pkg.raw, name)

    class Packed(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("time", ctypes.c_float), ("workspace_size", ctypes.c_size_t), ("solution_id", ctypes.c_uint64),
                    ("algorithm", ctypes.c_uint)]

    wrong = WrongRaw()
    wrong.miopenConvSolution_t = Packed  # type: ignore[attr-defined]
    problems = layout.check_layout(probe, wrong, built.spec)  # type: ignore[arg-type]
    assert any("miopenConvSolution_t.workspace_size: offset C 8 vs ctypes 4" in p for p in problems)


def test_every_wrapper_calls_through(fx: Built) -> None:
    results = callthrough.run_call_through(fx.pkg, fx.spec, fx.sem, fx.stub, "miopen", _plans(fx), target().version_getter)
    assert len(results) == len(fx.spec.functions) == 47
    failing = {r.function: r.problems for r in results if r.problems}
    assert failing == {}


def test_call_through_catches_a_wrong_prototype(fx: Built) -> None:
    raw = fx.pkg.raw
    saved = dict(raw.PROTOTYPES)
    try:
        restype, argtypes = raw.PROTOTYPES["miopenSet4dTensorDescriptor"]
        raw.PROTOTYPES["miopenSet4dTensorDescriptor"] = (restype, [argtypes[0], argtypes[1], ctypes.c_int8,
                                                                   *argtypes[3:]])
        restype, argtypes = raw.PROTOTYPES["miopenGetKernelTime"]
        raw.PROTOTYPES["miopenGetKernelTime"] = (restype, [argtypes[0], ctypes.POINTER(ctypes.c_double)])
        raw._reset()
        results = {r.function: r.problems for r in callthrough.run_call_through(fx.pkg, fx.spec, fx.sem, fx.stub, "miopen",
                                                                          _plans(fx), target().version_getter)}
    finally:
        raw.PROTOTYPES.clear()
        raw.PROTOTYPES.update(saved)
        raw._reset()
    assert results["miopenSet4dTensorDescriptor"], "an int passed as int8 must be caught"
    assert results["miopenGetKernelTime"], "a float read as double must be caught"
    assert not results["miopenCreate"]
