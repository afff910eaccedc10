"""Driver calls an op makes beyond the typed call it ends in, counted per call on a repeated shape.

The cases are those of the speed scripts: every op and its typed call, caches warm.
- `--backend hip` (default): the stub libMIOpen and libamdhip64 of benchmarks/op_dispatch.py; counted are the HIP
  functions the stub counts (`stub_hip_calls`) and the MIOpen functions the stub logs.
- `--backend opencl`: MIOpen's OpenCL build on the first OpenCL device (benchmarks/ocl_dispatch.py; `--lstm` the
  MIOpenGEMM build's LSTM step); counted is every OpenCL entry point, through a shim put in front of the ICD loader
  (LD_PRELOAD; its names are the loader's, `nm -D`): whatever pyopencl, the runtime or MIOpen calls. This script
  re-runs itself with the shim; needs gcc and nm. On another OpenCL driver (the device machine's NVIDIA) it counts
  the same way.
Prints, per case, the calls per op call and per typed call of every function either side calls, and each side's
total; what the op adds is the difference.
Usage: python benchmarks/driver_calls.py [--backend hip|opencl] [--lstm] [--number N]
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import os
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
for p in (REPO, REPO / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

#: set in the re-run process: the shim is loaded
SHIM_ENV = "MIOGEN_CL_SHIM"
Counts = Callable[[], Counter[str]]


def _shim_source(names: list[str]) -> str:
    """x86-64 trampolines: each entry point counts its call and jumps to the loader's own (arguments untouched)."""
    out = ["#define _GNU_SOURCE", "#include <dlfcn.h>", "#include <stdio.h>", "#include <stdlib.h>",
           f"__attribute__((used)) static unsigned long long miogen_cl_counts[{len(names)}];",
           f"__attribute__((used)) static void* miogen_cl_real[{len(names)}];",
           "static const char* const miogen_cl_names[] = {" + ", ".join(f'"{n}"' for n in names) + "};",
           f"int miogen_cl_n(void) {{ return {len(names)}; }}",
           "const char* miogen_cl_name(int i) { return miogen_cl_names[i]; }",
           "unsigned long long miogen_cl_count(int i) { return __atomic_load_n(&miogen_cl_counts[i], 0); }",
           "__attribute__((constructor)) static void miogen_cl_init(void) {",
           "    const char* target = getenv(\"MIOGEN_CL_TARGET\");",
           "    void* lib = dlopen(target, RTLD_NOW | RTLD_LOCAL);",
           "    if (!lib) { fprintf(stderr, \"cl shim: %s\\n\", dlerror()); abort(); }",
           "    for (int i = 0; i < miogen_cl_n(); i++) miogen_cl_real[i] = dlsym(lib, miogen_cl_names[i]);",
           "}", "__asm__(\".text\\n\""]
    for i, n in enumerate(names):
        out.append(f'    ".globl {n}\\n.type {n},@function\\n{n}:\\n'
                   f'    lock incq miogen_cl_counts+{8 * i}(%rip)\\n    jmp *miogen_cl_real+{8 * i}(%rip)\\n"')
    out.append(");")
    return "\n".join(out) + "\n"


def build_shim(tmp: Path, target: str) -> Path:
    """The counting shim for the OpenCL loader `target`, built with gcc into `tmp`."""
    syms = subprocess.run(["nm", "-D", "--defined-only", target], capture_output=True, text=True, check=True).stdout
    names = sorted({line.split()[-1].split("@")[0] for line in syms.splitlines()
                    if line.split() and line.split()[-1][:2] == "cl"})
    src, lib = tmp / "clshim.c", tmp / "libclshim.so"
    src.write_text(_shim_source(names))
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", str(lib), str(src), "-ldl"], check=True)
    return lib


def opencl_counter() -> Counts:
    """The shim's counts so far (the shim loaded in this process)."""
    me = ctypes.CDLL(None)
    me.miogen_cl_name.restype = ctypes.c_char_p
    me.miogen_cl_count.restype = ctypes.c_ulonglong
    names = [me.miogen_cl_name(i).decode() for i in range(me.miogen_cl_n())]

    def counts() -> Counter[str]:
        return +Counter({name: me.miogen_cl_count(i) for i, name in enumerate(names)})

    return counts


def hip_counter(mi: ctypes.CDLL, hip: ctypes.CDLL) -> Counts:
    """The stub libamdhip64's counts of its functions and the stub libMIOpen's log, as counts so far."""
    src = (REPO / "tests" / "fixtures" / "stub_hip.c").read_text()
    fns = sorted(set(src[src.index("FN_NAMES[] = {"):].split("};")[0].split('"')[1::2]))
    hip.stub_hip_calls.argtypes = [ctypes.c_char_p]
    hip.stub_hip_calls.restype = ctypes.c_long
    mi.miogen_stub_log.restype = ctypes.c_char_p

    def counts() -> Counter[str]:
        got = Counter({f: hip.stub_hip_calls(f.encode()) for f in fns})
        got.update(line.split("\t")[0] for line in (mi.miogen_stub_log() or b"").decode().splitlines() if line)
        return +got

    return counts


def count(pairs: list[tuple[str, Callable[[], object], Callable[[], object]]], counts: Counts, number: int,
          sync: Callable[[], object] = lambda: None) -> list[tuple[str, dict[str, float], dict[str, float]]]:
    """[(case, {function: calls per op call}, {function: calls per typed call})]."""
    rows = []
    for name, op, typed in pairs:
        op(), typed()
        sync()
        per = []
        for fn in (op, typed):
            before = counts()
            for _ in range(number):
                fn()
            got = counts()
            got.subtract(before)
            sync()
            per.append({k: v / number for k, v in got.items() if v})
        rows.append((name, per[0], per[1]))
    return rows


def report(rows: list[tuple[str, dict[str, float], dict[str, float]]]) -> None:
    for name, op, typed in rows:
        print(f"{name}: op {sum(op.values()):g} calls, typed {sum(typed.values()):g}; "
              f"the op adds {sum(op.values()) - sum(typed.values()):g}")
        for fn in sorted(set(op) | set(typed)):
            o, t = op.get(fn, 0.0), typed.get(fn, 0.0)
            print(f"    {fn:44s} op {o:6g}  typed {t:6g}{'   <- +' + format(o - t, 'g') if o != t else ''}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", choices=("hip", "opencl"), default="hip")
    ap.add_argument("--lstm", action="store_true", help="OpenCL: the LSTM step on the MIOpenGEMM build")
    ap.add_argument("--number", type=int, default=50)
    ap.add_argument("--target", help="OpenCL: the ICD loader to count in front of (default: the one ldconfig finds)")
    args = ap.parse_args()
    if args.backend == "hip":
        import op_dispatch

        with tempfile.TemporaryDirectory(prefix="miogen-calls-") as tmp:
            mi, hip = op_dispatch.build_stubs(Path(tmp))
            pairs = op_dispatch.cases((mi, hip))
            mi.miogen_stub_set_quiet(0)
            report(count(pairs, hip_counter(mi, hip), args.number))
        return 0
    if not os.environ.get(SHIM_ENV):
        target = args.target or ctypes.util.find_library("OpenCL")
        if target is None:
            print("no OpenCL loader found (--target)")
            return 1
        if "/" not in target:
            target = next((line.split("=>")[-1].strip() for line in subprocess.run(
                ["ldconfig", "-p"], capture_output=True, text=True).stdout.splitlines() if target in line), target)
        with tempfile.TemporaryDirectory(prefix="miogen-clshim-") as tmp:
            shim = build_shim(Path(tmp), target)
            env = {**os.environ, SHIM_ENV: "1", "MIOGEN_CL_TARGET": target,
                   "LD_PRELOAD": " ".join(filter(None, (str(shim), os.environ.get("LD_PRELOAD"))))}
            return subprocess.run([sys.executable, *sys.argv], env=env).returncode
    import ocl_dispatch

    why = ocl_dispatch.lstm_unavailable() if args.lstm else ocl_dispatch.unavailable()
    if why is not None:
        print(f"not counted: {why}")
        return 0
    q, pairs = ocl_dispatch.lstm_pairs() if args.lstm else ocl_dispatch.pairs()
    report(count(pairs, opencl_counter(), args.number, q.finish))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
