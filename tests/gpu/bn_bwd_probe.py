"""Why MIOpen's BatchNorm spatial backward is wrong on NVIDIA's OpenCL (docs/real-miopen-gpu.md): a probe.

1. Through MIOpen: `miopenBatchNormalizationBackward` (spatial, float32, saved and recomputed statistics) on small
   shapes with each OpenCL build ($MIOGEN_REAL_MIOPEN_OCL, $MIOGEN_REAL_MIOPEN_OCL_330), in a child process with
   MIOPEN_LOG_LEVEL=6, which prints each kernel's build options.
2. Standalone (pyopencl): MIOpen's own MIOpenBatchNormBwdSpatial.cl of each release (headers inlined, as MIOpen
   embeds it), built with the options the solver gives these shapes (variant 0: one 1024-wide work-group per
   channel) two ways: as the recipe's patch 03 leaves it off AMD (`reqd_work_group_size` rewritten to
   `work_group_size_hint`) and as upstream wrote it. Each build is launched twice: as the recipe's patch 04 launches
   it (the solver's 1024 only when it fits the kernel's CL_KERNEL_WORK_GROUP_SIZE, else no local size: the runtime
   picks one, which a copy of the kernel records) and as the fix does (up to the device's
   CL_DEVICE_MAX_WORK_GROUP_SIZE). Printed: the work-group size the device reports for the kernel and for trivial
   kernels, the kernel's registers (NVIDIA's -cl-nv-verbose) and local memory, and the max error of dx, dscale and
   dbias against a float64 reference. The forward-training kernels of the 8x4x32x32 row (variant 2, 1x1024) are
   built both ways for the work-group size reported.

  here (once):  .venv/bin/python -m tests.gpu.bn_bwd_probe --extract /work/.mirror/ROCm+MIOpen/repo
  device tool:  bash tests/gpu/ocl_carry.sh, then run(command="bash tests/gpu/ocl_nvidia.sh --module
                tests.gpu.bn_bwd_probe", carry=["device_carry/ocl", "device_carry/bnprobe"]) (from a helper's
                worktree: copy both into the session checkout's git-ignored device_carry/ first, as done for the
                results in docs/ocl-results/causes.md)
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

KERNELS = Path("device_carry/bnprobe")
#: release folder -> the git ref of ROCm/MIOpen it was built from
REFS = {"2.17.0": "rocm-5.2.3", "3.3.0": "2d1fd997a6fcf801ac4ca7a63e0656ef1cb9f488"}
FILES = ("MIOpenBatchNormBwdSpatial.cl", "MIOpenBatchNormFwdTrainSpatial.cl", "batchnorm_functions.h",
         "reduction_functions.h")
LIB_ENVS = {"2.17.0": "MIOGEN_REAL_MIOPEN_OCL", "3.3.0": "MIOGEN_REAL_MIOPEN_OCL_330"}
#: N, C, H, W: the smallest, the typed-API check's, the runtime op check's
SHAPES = ((1, 1, 2, 2), (3, 4, 3, 5), (3, 4, 5, 2))
EPS = 1e-5
TOL = 1e-4


def extract(repo: Path) -> None:
    """Copy the kernel files of each release out of a (bare) MIOpen git mirror into KERNELS (git-ignored)."""
    for rel, ref in REFS.items():
        (KERNELS / rel).mkdir(parents=True, exist_ok=True)
        for f in FILES:
            text = subprocess.run(["git", "--git-dir", str(repo), "show", f"{ref}:src/kernels/{f}"], check=True,
                                  capture_output=True, text=True).stdout
            (KERNELS / rel / f).write_text(text)
    print(f"wrote {KERNELS}/{{{','.join(REFS)}}}")


def inlined(rel: str, name: str) -> str:
    """The kernel source with its two headers inlined (MIOpen embeds it so)."""
    d = KERNELS / rel

    def sub(m: re.Match[str]) -> str:
        return (d / m.group(1)).read_text()

    return re.sub(r'^#include "([a-z_]+\.h)"\s*$', sub, (d / name).read_text(), flags=re.M)


def reference(x: np.ndarray, dy: np.ndarray, scale: np.ndarray) -> tuple[np.ndarray, ...]:
    """dx, dscale, dbias of spatial BN in float64; and the saved mean and inverse std (float32)."""
    x64, g = x.astype(np.float64), dy.astype(np.float64)
    axes = (0, 2, 3)
    m = x.size // x.shape[1]
    mean, var = x64.mean(axis=axes, keepdims=True), x64.var(axis=axes, keepdims=True)
    inv = 1 / np.sqrt(var + EPS)
    xhat = (x64 - mean) * inv
    db, ds = g.sum(axis=axes, keepdims=True), (g * xhat).sum(axis=axes, keepdims=True)
    dx = scale.reshape(1, -1, 1, 1) * inv / m * (m * g - db - xhat * ds)
    return dx, ds.ravel(), db.ravel(), mean.ravel().astype(np.float32), inv.ravel().astype(np.float32)


def inputs(shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r = np.random.default_rng(14)
    x = (r.standard_normal(shape) * 2 + 1).astype(np.float32)
    return x, r.standard_normal(shape).astype(np.float32), r.uniform(0.5, 2, shape[1]).astype(np.float32)


def err(got: np.ndarray, want: np.ndarray) -> float:
    """Max abs error relative to max(1, the reference's scale)."""
    return float(np.max(np.abs(got.astype(np.float64) - want)) / max(1.0, float(np.max(np.abs(want)))))


# ---------------------------------------------------------------------------------------------- 1. MIOpen

def miopen_child(lib: str) -> None:
    """In a child process (MIOpen reads its log variables once): backward on SHAPES; JSON on stdout."""
    import miopen

    try:
        miopen.load_library(ctypes.CDLL(lib))
    except miopen.MIOpenVersionError:
        os.environ["MIOPEN_SKIP_VERSION_CHECK"] = "1"
        miopen.load_library(ctypes.CDLL(lib))
    from tests.real.ocl.common import desc, dev, handle, zeros

    h, out = handle(), []
    for shape in SHAPES:
        x, dy, scale = inputs(shape)
        dx_ref, ds_ref, db_ref, sm, siv = reference(x, dy, scale)
        d, bn = desc(list(shape)), miopen.create_tensor_descriptor()
        miopen.derive_bn_tensor_descriptor(bn, d, miopen.BatchNormMode.miopenBNSpatial)
        for saved in (True, False):
            dxd, dsd, dbd = zeros(x.size), zeros(shape[1]), zeros(shape[1])
            miopen.batch_normalization_backward(
                h, miopen.BatchNormMode.miopenBNSpatial, 1.0, 0.0, 1.0, 0.0, d, dev(x).ptr, d, dev(dy).ptr, d,
                dxd.ptr, bn, dev(scale).ptr, dsd.ptr, dbd.ptr, EPS, dev(sm).ptr if saved else None,
                dev(siv).ptr if saved else None)
            out.append({"shape": shape, "saved": saved, "dx": err(dxd.read().reshape(shape), dx_ref),
                        "dscale": err(dsd.read(), ds_ref), "dbias": err(dbd.read(), db_ref)})
    print(json.dumps(out), flush=True)


def through_miopen(rel: str, lib: str) -> dict[str, Any]:
    env = {**os.environ, "MIOPEN_ENABLE_LOGGING": "0", "MIOPEN_LOG_LEVEL": "6",
           "MIOPEN_CUSTOM_CACHE_DIR": tempfile.mkdtemp(prefix="bnprobe-cache-"),
           "MIOPEN_USER_DB_PATH": tempfile.mkdtemp(prefix="bnprobe-db-")}
    p = subprocess.run([sys.executable, "-m", "tests.gpu.bn_bwd_probe", "--miopen-child", lib], env=env,
                       capture_output=True, text=True, timeout=240)
    builds = [line.strip() for line in p.stderr.splitlines()
              if "Building OpenCL program: 'MIOpenBatchNormBwdSpatial.cl'" in line]
    rows = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else []
    print(f"\n== {rel} through MIOpen ({lib}): rc {p.returncode}")
    for line in builds:
        print("  log:", line[:400])
    for row in rows:
        bad = max(row["dx"], row["dscale"], row["dbias"]) > TOL
        print(f"  {row['shape']} saved={row['saved']}: dx {row['dx']:.3g}, dscale {row['dscale']:.3g}, "
              f"dbias {row['dbias']:.3g} relative error -> {'WRONG' if bad else 'ok'}")
    if p.returncode:
        print(p.stderr[-3000:])
    return {"rc": p.returncode, "builds": builds, "rows": rows}


# ---------------------------------------------------------------------------------------------- 2. standalone

def bwd_options(shape: tuple[int, ...], saved: bool, rel: str) -> str:
    """BnBwdTrainingSpatialSingle's options for a float32 NCHW shape with H*W <= 512 and N <= 64 (variant 0)."""
    n, c, h, w = shape
    assert h * w <= 512 and n <= 64
    gfx = {"2.17.0": "-DMIO_BN_GFX1030=0", "3.3.0": "-DMIO_BN_GFX103X=0 -DMIO_BN_GFX110X=0 -DMIO_BN_GFX120X=0"}
    defs = {"MIOPEN_USE_FP16": 0, "MIOPEN_USE_FP32": 1, "MIOPEN_USE_FPMIX": 0, "MIO_BN_USESAVED": int(saved),
            "MIO_BN_N": n, "MIO_BN_C": c, "MIO_BN_HW": h * w, "MIO_BN_NHW": n * h * w, "MIO_BN_CHW": c * h * w,
            "MIO_BN_NCHW": n * c * h * w, "MIO_BN_LDS_SIZE": 1024, "MIO_BN_LDSGCN_SIZE": 16, "MIO_BN_VARIANT": 0,
            "MIO_WAVESIZE": 64, "MIO_BN_GRP0": 1024, "MIO_BN_GRP1": 1, "MIO_BN_GRP2": 1, "MIO_LAYOUT_NHWC": 0}
    return " ".join(f"-D{k}={v}" for k, v in defs.items()) + f" {gfx[rel]} -cl-std=CL1.2"


def fwd_options(rel: str) -> str:
    """BnFwdTrainingSpatialMultiple's options for the 8x4x32x32 check (variant 2, local 1x1024x1, saved stats)."""
    gfx = {"2.17.0": "-DMIO_BN_GFX1030=0", "3.3.0": "-DMIO_BN_GFX103X=0 -DMIO_BN_GFX110X=0 -DMIO_BN_GFX120X=0"}
    defs = {"MIOPEN_USE_FP16": 0, "MIOPEN_USE_FP32": 1, "MIOPEN_USE_FPMIX": 0, "MIO_SAVE_MEAN_VARIANCE": 1,
            "MIO_RUNNING_RESULT": 0, "MIO_BN_VARIANT": 2, "MIO_BN_LDS_SIZE": 1024, "MIO_BN_LDSGCN_SIZE": 16,
            "MIO_BN_N": 8, "MIO_BN_GRP0": 1, "MIO_BN_GRP1": 1024, "MIO_BN_GRP2": 1, "MIO_LAYOUT_NHWC": 0,
            "MIO_BN_C": 4, "MIO_BN_HW": 1024, "MIO_BN_NHW": 8192, "MIO_BN_CHW": 4096, "MIO_BN_NCHW": 32768,
            "MIO_BN_NGRPS": 1}
    return " ".join(f"-D{k}={v}" for k, v in defs.items()) + f" {gfx[rel]} -cl-std=CL1.2"


def build(cl: Any, ctx: Any, dev: Any, src: str, opts: str, name: str, nvidia: bool) -> tuple[Any, dict[str, Any]]:
    """Build; the kernel and what the device says of it (work-group limit, registers, memory)."""
    prg = cl.Program(ctx, src).build(options=opts + (" -cl-nv-verbose" if nvidia else ""))
    k = getattr(prg, name)
    log = prg.get_build_info(dev, cl.program_build_info.LOG)
    regs = re.findall(r"Used (\d+) registers", log)
    info = {"wg_limit": k.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, dev),
            "compile_wg": list(k.get_work_group_info(cl.kernel_work_group_info.COMPILE_WORK_GROUP_SIZE, dev)),
            "private_bytes": k.get_work_group_info(cl.kernel_work_group_info.PRIVATE_MEM_SIZE, dev),
            "local_bytes": k.get_work_group_info(cl.kernel_work_group_info.LOCAL_MEM_SIZE, dev),
            "registers": int(regs[-1]) if regs else None}
    try:
        info["attributes"] = k.get_info(cl.kernel_info.ATTRIBUTES)
    except cl.Error as exc:
        info["attributes"] = f"({exc.code})"
    return k, info


def launch(cl: Any, q: Any, k: Any, shape: tuple[int, ...], saved: bool, local: tuple[int, ...] | None
           ) -> dict[str, Any]:
    """Run the backward kernel on SHAPE's inputs with `local` (None: the runtime picks); relative errors."""
    ctx = q.context
    x, dy, scale = inputs(shape)
    dx_ref, ds_ref, db_ref, sm, siv = reference(x, dy, scale)
    mf = cl.mem_flags

    def buf(a: np.ndarray) -> Any:
        return cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(a))

    c = shape[1]
    dx, ds, db = np.zeros_like(x), np.zeros(c, np.float32), np.zeros(c, np.float32)
    bufs = [buf(x), buf(dy), buf(dx), buf(scale), buf(ds), buf(db)]
    stats = [buf(sm), buf(siv)] if saved else [np.float64(EPS)]
    inhw = np.float32(1.0 / (x.size // c))
    try:
        k(q, (1024 * c, 1, 1), local, *bufs, *stats, inhw)
        q.finish()
    except cl.Error as exc:
        return {"error": f"OpenCL error {exc.code} ({exc})"}
    for host, b in zip((dx, ds, db), (bufs[2], bufs[4], bufs[5]), strict=True):
        cl.enqueue_copy(q, host, b)
    q.finish()
    return {"dx": err(dx, dx_ref), "dscale": err(ds, ds_ref), "dbias": err(db, db_ref)}


def picked_local_size(cl: Any, q: Any, src: str, opts: str, shape: tuple[int, ...], saved: bool) -> int:
    """The local size the runtime picks for the backward kernel when none is passed (the kernel records it)."""
    rec = re.sub(r"_FLOAT_PREC INHW\)\s*\{", "_FLOAT_PREC INHW, __global uint* lsz)\n{\n"
                 "    if(get_global_id(0) == 0) lsz[0] = (uint)get_local_size(0);", src)
    k = cl.Program(q.context, rec).build(options=opts).MIOpenBatchNormBwdSpatial
    x, dy, scale = inputs(shape)
    _, _, _, sm, siv = reference(x, dy, scale)
    mf = cl.mem_flags
    bufs = [cl.Buffer(q.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(a))
            for a in (x, dy, np.zeros_like(x), scale, scale * 0, scale * 0, *((sm, siv) if saved else ()))]
    lsz = np.zeros(1, np.uint32)
    out = cl.Buffer(q.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=lsz)
    stats = [] if saved else [np.float64(EPS)]
    k(q, (1024 * shape[1], 1, 1), None, *bufs, *stats, np.float32(1.0 / (x.size // shape[1])), out)
    cl.enqueue_copy(q, lsz, out)
    q.finish()
    return int(lsz[0])


def limits(cl: Any, ctx: Any, dev: Any) -> dict[str, int]:
    """CL_KERNEL_WORK_GROUP_SIZE of trivial kernels: plain, with 4 and 16 KiB of local memory and a barrier."""
    body = {"plain": "", "local 4 KiB": "__local float l[1024]; l[get_local_id(0) % 1024] = 1.f; "
                                         "barrier(CLK_LOCAL_MEM_FENCE); a[get_global_id(0)] = l[0];",
            "local 16 KiB": "__local float l[4096]; l[get_local_id(0)] = 1.f; barrier(CLK_LOCAL_MEM_FENCE); "
                            "a[get_global_id(0)] = l[4095 - get_local_id(0)];"}
    out = {}
    for name, text in body.items():
        k = cl.Program(ctx, f"__kernel void t(__global float* a) {{ a[get_global_id(0)] = 0.f; {text} }}"
                       ).build().t
        out[name] = k.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, dev)
    return out


def standalone(rel: str) -> list[dict[str, Any]]:
    import pyopencl as cl

    from tests.real.ocl.common import device

    dev = device()
    nvidia = "NVIDIA" in dev.platform.vendor.upper()
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx)
    src = inlined(rel, "MIOpenBatchNormBwdSpatial.cl")
    hint = src.replace("reqd_work_group_size", "work_group_size_hint")  # what the recipe's patch 03 does
    trivial = limits(cl, ctx, dev)
    rows: list[dict[str, Any]] = [{"trivial kernels' work-group limits": trivial}]
    print(f"\n== {rel} standalone on {dev.platform.name.strip()}: {dev.name.strip()}; trivial kernels' "
          f"CL_KERNEL_WORK_GROUP_SIZE: {trivial}")

    def show(res: dict[str, Any]) -> str:
        if "error" in res:
            return str(res["error"])
        bad = max(res["dx"], res["dscale"], res["dbias"]) > TOL
        return f"dx {res['dx']:.3g} dscale {res['dscale']:.3g} dbias {res['dbias']:.3g} {'WRONG' if bad else 'ok'}"

    for shape in SHAPES:
        for saved in (True, False):
            for way, text in (("patch 03 (hint)", hint), ("upstream (reqd)", src)):
                opts = bwd_options(shape, saved, rel)
                try:
                    k, info = build(cl, ctx, dev, text, opts, "MIOpenBatchNormBwdSpatial", nvidia)
                except cl.Error as exc:
                    rows.append({"shape": shape, "saved": saved, "way": way, "build_error": str(exc)[:2000]})
                    print(f"  {shape} saved={saved} {way}: build failed: {str(exc)[:500]}")
                    continue
                # the recipe's patch 04: the solver's 1024 is kept when it fits the kernel's
                # CL_KERNEL_WORK_GROUP_SIZE, else no local size is passed; the fix: when it fits the device's
                local = (1024, 1, 1) if 1024 <= max(info["wg_limit"], 256) else None
                fixed = (1024, 1, 1) if 1024 <= dev.max_work_group_size else None
                row = {"shape": shape, "saved": saved, "way": way, **info, "patch04_local": local,
                       "patch04": launch(cl, q, k, shape, saved, local), "fixed_local": fixed,
                       "fixed": launch(cl, q, k, shape, saved, fixed)}
                if local is None and text is hint:
                    try:
                        row["runtime_picked"] = picked_local_size(cl, q, text, opts, shape, saved)
                    except cl.Error as exc:
                        row["runtime_picked"] = str(exc)
                rows.append(row)
                print(f"  {shape} saved={saved} {way}: CL_KERNEL_WORK_GROUP_SIZE {info['wg_limit']}, registers "
                      f"{info['registers']}, local mem {info['local_bytes']} B | as patch 04 (local {local}"
                      f"{', the runtime picked ' + str(row['runtime_picked']) if 'runtime_picked' in row else ''}): "
                      f"{show(row['patch04'])} | fixed (local {fixed}): {show(row['fixed'])}")
    fsrc = inlined(rel, "MIOpenBatchNormFwdTrainSpatial.cl")
    for way, text in (("patch 03 (hint)", fsrc.replace("reqd_work_group_size", "work_group_size_hint")),
                      ("upstream (reqd)", fsrc)):
        for part in ("MeanVariance", "FinalMeanVariance", "Norm"):
            name = "MIOpenBatchNormFwdTrainSpatial" + part
            try:
                _, info = build(cl, ctx, dev, text, fwd_options(rel), name, nvidia)
            except cl.Error as exc:
                print(f"  forward training {name} {way}: build failed: {str(exc)[:500]}")
                continue
            rows.append({"kernel": f"{name} 8x4x32x32 variant 2", "way": way, **info})
            print(f"  forward training 8x4x32x32 {name} (local 1x1024) {way}: CL_KERNEL_WORK_GROUP_SIZE "
                  f"{info['wg_limit']}, registers {info['registers']}, local mem {info['local_bytes']} B")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--extract", type=Path, help="a git directory of ROCm/MIOpen: copy the kernels, then exit")
    ap.add_argument("--miopen-child", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "/tmp/bnprobe")))
    a = ap.parse_args()
    if a.extract:
        extract(a.extract)
        return 0
    if a.miopen_child:
        miopen_child(a.miopen_child)
        return 0
    import pyopencl as cl

    from tests.real.ocl.common import device

    d = device()
    print(f"device: {d.platform.name.strip()} {d.platform.version} | {d.name.strip()} | {d.version} | max wg "
          f"{d.max_work_group_size} | non-uniform wg: {getattr(d, 'non_uniform_work_group_support', '?')}")
    try:
        print("registers per block (cl_nv_device_attribute_query):", d.get_info(0x4002))
    except (cl.Error, ValueError, TypeError) as exc:
        print("registers per block: unknown", exc)
    result: dict[str, Any] = {}
    for rel, var in LIB_ENVS.items():
        lib = os.environ.get(var)
        result[rel] = {"miopen": through_miopen(rel, lib) if lib and Path(lib).is_file() else None,
                       "standalone": standalone(rel)}
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "bn_bwd_probe.json").write_text(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
