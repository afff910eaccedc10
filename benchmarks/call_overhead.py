"""Typed-call overhead against equivalent hand-written raw ctypes code, through the stub library.

Both sides make the same C call with the same out-parameter allocation and status check; the
stub runs in quiet mode (no logging). Target: typed <= 1.0x raw for a setter, a four-output
getter and a 13-argument convolution-forward-shaped call. Needs gcc (g++).
"""

from __future__ import annotations

import ctypes
import importlib
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from miogen.prove import cxx, stublib  # noqa: E402
from miogen.semantics.annotations import load_annotations
from miogen.semantics.resolve import resolve  # noqa: E402
from miogen.parse.headers import ParseOptions
from miogen.parse.parser import parse_header  # noqa: E402
from miogen.base.files import write_tree  # noqa: E402
from miogen.render.planner import plan  # noqa: E402
from miogen.render.package import render  # noqa: E402
from miogen.spec.target import load_target  # noqa: E402

HEADER = REPO / "tests" / "fixtures" / "include" / "miopen" / "miopen.h"
ANNOTATIONS = REPO / "tests" / "fixtures" / "annotations.yaml"


def build(tmp: Path) -> tuple[object, ctypes.CDLL]:
    target = load_target()
    spec = parse_header(HEADER, target, ParseOptions(beta=True))
    ann = load_annotations(ANNOTATIONS)
    sem = resolve(spec, ann, prefix=target.function_prefix)
    write_tree(render(plan(spec, sem, target, "# bench")), tmp / "bench_pkg")
    stub = cxx.compile_cpp(stublib.stub_source(spec, sem, HEADER, "bench", target.status_type,
                                           target.version_getter),
                           tmp / "libstub.so", target, shared=True)
    sys.path.insert(0, str(tmp))
    pkg = importlib.import_module("bench_pkg")
    lib = ctypes.CDLL(str(stub))
    lib.miogen_stub_set_quiet(1)
    pkg._support.load_library(lib)  # type: ignore[attr-defined]
    return pkg, lib


def cases(tmp: Path) -> list[tuple[str, Callable[[], object], Callable[[], object]]]:
    """[(case, typed call, equivalent raw ctypes call)] through the quiet stub built in `tmp`."""
    m, _ = build(tmp)
    raw = m.raw  # type: ignore[attr-defined]
    byref, c_float, c_double, c_uint = ctypes.byref, ctypes.c_float, ctypes.c_double, ctypes.c_uint
    h = m.Handle.from_address(0x100)  # type: ignore[attr-defined]
    d = m.TensorDescriptor.from_address(0x200)  # type: ignore[attr-defined]
    c = m.ConvolutionDescriptor.from_address(0x300)  # type: ignore[attr-defined]
    a = m.ActivationDescriptor.from_address(0x400)  # type: ignore[attr-defined]
    f32 = m.DataType.miopenFloat  # type: ignore[attr-defined]
    algo = m.ConvFwdAlgorithm.miopenConvolutionFwdAlgoDirect  # type: ignore[attr-defined]
    hp, dp, cp, ap = 0x100, 0x200, 0x300, 0x400

    def raw_setter() -> None:
        st = raw.miopenSet4dTensorDescriptor(dp, 1, 8, 64, 56, 56)
        if st:
            raise RuntimeError(st)

    def typed_setter() -> None:
        m.set_4d_tensor_descriptor(d, f32, 8, 64, 56, 56)  # type: ignore[attr-defined]

    def raw_getter() -> tuple[int, float, float, float]:
        mode, alpha, beta, gamma = c_uint(), c_double(), c_double(), c_double()
        st = raw.miopenGetActivationDescriptor(ap, byref(mode), byref(alpha), byref(beta), byref(gamma))
        if st:
            raise RuntimeError(st)
        return mode.value, alpha.value, beta.value, gamma.value

    def typed_getter() -> object:
        return m.get_activation_descriptor(a)  # type: ignore[attr-defined]

    def raw_conv() -> None:
        st = raw.miopenConvolutionForward(hp, byref(c_float(1.0)), dp, 0x1000, dp, 0x2000, cp, 1,
                                          byref(c_float(0.0)), dp, 0x3000, None, 0)
        if st:
            raise RuntimeError(st)

    def typed_conv() -> None:
        m.convolution_forward(h, 1.0, d, 0x1000, d, 0x2000, c, algo, 0.0, d, 0x3000, None, 0)  # type: ignore[attr-defined]

    return [("setter (miopenSet4dTensorDescriptor, 6 args)", typed_setter, raw_setter),
            ("four-output getter (miopenGetActivationDescriptor)", typed_getter, raw_getter),
            ("13-argument miopenConvolutionForward", typed_conv, raw_conv)]


def main() -> int:
    sys.path.insert(0, str(REPO / "benchmarks"))
    from op_dispatch import interleaved

    with tempfile.TemporaryDirectory() as tmp:
        pairs = cases(Path(tmp))
        for _, typed, rawf in pairs:
            typed(), rawf()
        print("per call, CPU time, best of 15 interleaved runs x 2000 calls (stub in quiet mode):")
        for name, tt, tr in interleaved(pairs, 15, 2000):
            print(f"  {name}: raw {tr * 1e6:.2f} us, typed {tt * 1e6:.2f} us, ratio {tt / tr:.2f} (target <= 1.0)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
