"""The numeric suite of the real MIOpen 2.17.0 OpenCL kernels (tests/real/ocl) on one OpenCL device, as a table.

Every check of `tests/real/ocl` runs in worker processes bound to the library given (Find-running checks in
workers of their own, under `--find-timeout`); each table row gets the outcome this device gave, with the reason
(a max error, a status, a hang). `--gemm-lib` adds the RNN and GEMM-convolution checks on the MIOpenGEMM build
(tests/real/gemm), `--v330-lib` the Find 2.0 checks on MIOpen 3.3.0's OpenCL build (tests/real/ocl330): one row per
check (`EXTRA`). Each check's C functions and the statuses they returned go under "functions" (the coverage page
reads them). `--bench` adds the speed figures (`tests/real/ocl/bench.py`, and `tests/real/gemm/bench.py` with
`--gemm-lib`). Writes `<out>/<name>.json`, prints one table. `--page` renders docs/real-miopen-gpu.md from the
committed results (docs/ocl-results/*.json, with causes.md there under the table) instead.

    python -m tests.gpu.ocl_suite --lib DIR/libMIOpen.so.1 --gemm-lib GDIR/libMIOpen.so.1 \
        --v330-lib V/libMIOpen.so.1 --name pocl --out docs/ocl-results
    python -m tests.gpu.ocl_suite --page

On the device machine `tests/gpu/ocl_nvidia.sh` sets the machine up and runs it on NVIDIA's OpenCL.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.real.client import Died, Worker, WorkerError  # noqa: E402
from tests.real.ocl import coverage  # noqa: E402
from tests.real.ocl.common import CLAIMS  # noqa: E402
from tests.real.ocl.plan import FIND_ENV, FINDS, LAST, SPECIAL  # noqa: E402

RESULTS = REPO / "docs" / "ocl-results"
F32 = "float32"
#: the checks of the other builds, one table row each (checked when the check passes; its asserts are against
#: numpy): build -> [(check, row)]
EXTRA: dict[str, list[tuple[str, tuple[str, str, str]]]] = {
    "gemm": [("gemm.checks_rnn:typed_api", ("RNN RELU, TANH, LSTM, GRU (8 cases)", F32,
                                             "2.17.0 + MIOpenGEMM, typed API: inference, training, backward data, "
                                             "backward weights")),
             ("gemm.checks_rnn:runtime_op", ("RNN LSTM, GRU, TANH", F32,
                                             "2.17.0 + MIOpenGEMM, runtime op: all four calls")),
             ("gemm.checks_conv:find_and_immediate", ("Convolution (GEMM solvers)", F32,
                                                      "2.17.0 + MIOpenGEMM: Find + legacy calls, Immediate, "
                                                      "three directions")),
             ("gemm.checks_conv:planner_modes", ("Convolution (GEMM solvers)", F32,
                                                 "2.17.0 + MIOpenGEMM, runtime: planner immediate, find, auto; "
                                                 "zero-workspace cap"))],
    "v330": [("ocl330.checks_find2:conv", ("Convolution", F32, "3.3.0 Find 2.0: forward, backward data, "
                                                              "backward weights")),
             ("ocl330.checks_find2:softmax", ("Softmax ACCURATE, LOG × CHANNEL, INSTANCE", F32,
                                              "3.3.0 Find 2.0: forward, backward")),
             ("ocl330.checks_find2:fused", ("Fused conv + bias + ReLU, BN inference + ReLU", F32,
                                            "3.3.0 Find 2.0: fuse_problems")),
             ("ocl330.checks_find2:runtime_planner", ("Convolution", F32,
                                                      "3.3.0, runtime: planner find2 and auto (Find 2.0)"))],
}
#: the environment each extra build's workers need beyond FIND_ENV
EXTRA_ENV = {"gemm": {}, "v330": {"MIOPEN_DEBUG_ENABLE_DEPRECATED_SOLVERS": "1"}}
PAGE = REPO / "docs" / "real-miopen-gpu.md"
#: the causes found for rows that fail on a GPU only (hand-written; the page shows it under the table)
CAUSES = RESULTS / "causes.md"
#: backends of the results page, in column order: (file name, column title)
COLUMNS = (("pocl", "PoCL (CPU)"), ("nvidia", "NVIDIA OpenCL"), ("pocl330", "PoCL (CPU), MIOpen 3.3.0"),
           ("nvidia330", "NVIDIA OpenCL, MIOpen 3.3.0"))


def _short(text: str, n: int = 160) -> str:
    line = " ".join(text.split())
    return line if len(line) <= n else line[:n - 1] + "…"


def _rows_of(name: str, result: Any, timeout: float) -> list[list[str]]:
    """[op, dtype, path, outcome, reason, check] for every row `name` claims (and any other it returned)."""
    claims = CLAIMS[name]
    if isinstance(result, WorkerError):
        why = _short(f"{result.type_name}: {result.message}")
        return [[*row, "failed", why, name] for row in claims]
    if isinstance(result, Died):
        outcome = "hung" if result.timed_out else "crashed"
        why = (f"no answer in {timeout:.0f} s (killed)" if result.timed_out else result.describe())
        if result.in_function:
            why += f", inside {result.in_function}"
        return [[*row, outcome, why, name] for row in claims]
    value = result.value
    reasons = value.get("reasons", {})
    got = {row: outcome for row, outcome in value.items() if isinstance(row, tuple)}
    out = []
    for row in [*claims, *(r for r in got if r not in claims)]:
        if row not in got:
            out.append([*row, "not reached", "the check returned without this row", name])
            continue
        outcome = got[row]
        claimed = claims.get(row)
        reason = reasons.get(row) or (claimed[1] if claimed and claimed[0] == outcome else "")
        out.append([*row, outcome, _short(reason), name])
    return out


def _bench(w: Worker, check: str = "ocl.bench:speed") -> dict[str, Any]:
    try:
        small_only = os.environ.get("MIOGEN_OCL_BENCH_LARGE") == "0"  # a CPU device: the small shapes only
        result = w.call(check, timeout=240.0, **({"large": False, "rounds": 2} if small_only else {}))
    except WorkerError as exc:
        return {"error": _short(f"{exc.type_name}: {exc.message}", 2000)}
    if isinstance(result, Died):
        return {"error": result.describe(), "stderr": result.stderr_tail}
    print(f"# speed: {result.seconds:.1f} s", flush=True)
    return dict(result.value)


def _probe_find(lib: Path, timeout: float) -> list[list[str]]:
    """The Find check again with MIOPEN_FIND_MODE=NORMAL alone (FFT, the 11×11 solver and parallel compiles left
    on, fresh caches): whether the runtime's other Find settings (`miopen.backend.FIND_ENV`) matter here."""
    name = "ocl.checks_conv:convolution"
    w = Worker(lib, None, cache=None, extra_env={"MIOPEN_FIND_MODE": "NORMAL"})
    try:
        result: Any = w.call(name, timeout=timeout)
    except WorkerError as exc:
        result = exc
    finally:
        w.close()
        w.cleanup()
    rows = _rows_of(name, result, timeout)
    print(f"# {name} (NORMAL only): " + ", ".join(sorted({r[3] for r in rows})), flush=True)
    return [[op, dt, f"{path} [probe: MIOPEN_FIND_MODE=NORMAL alone]", *rest] for op, dt, path, *rest in rows
            if "Find" in path]


def _functions(result: Any) -> dict[str, list[int]]:
    """The C functions a check called and the statuses they returned (none known after a death)."""
    return dict(getattr(result, "statuses", None) or {})


def run_extra(build: str, lib: Path, cache: Path, timeout: float, bench: bool
              ) -> tuple[list[list[str]], dict[str, float], dict[str, dict[str, list[int]]], dict[str, Any] | None]:
    """The `EXTRA` checks of one build in a worker of their own: (rows, seconds, functions, speed rows)."""
    w = Worker(lib, None, cache=cache, extra_env={**FIND_ENV, **EXTRA_ENV[build]})
    rows: list[list[str]] = []
    seconds: dict[str, float] = {}
    functions: dict[str, dict[str, list[int]]] = {}
    speed = None
    try:
        if bench and build == "gemm":
            speed = _bench(w, "gemm.bench:speed")
        for name, row in EXTRA[build]:
            t0 = time.perf_counter()
            try:
                result: Any = w.call(name, timeout=timeout)
            except WorkerError as exc:
                result = exc
            seconds[name] = round(time.perf_counter() - t0, 2)
            functions[name] = _functions(result)
            if isinstance(result, WorkerError):
                rows.append([*row, "failed", _short(f"{result.type_name}: {result.message}"), name])
            elif isinstance(result, Died):
                rows.append([*row, "hung" if result.timed_out else "crashed", result.describe(), name])
            else:
                rows.append([*row, "checked", "", name])
            print(f"# {name}: {seconds[name]} s: {rows[-1][3]}", flush=True)
    finally:
        w.close()
        w.cleanup()
    return rows, seconds, functions, speed


def run_suite(lib: Path, cache: Path, find_timeout: float, bench: bool, partial: Path | None = None,
              check_timeout: float = 150.0, probe: bool = False, extra: dict[str, Path] | None = None,
              env: dict[str, str] | None = None) -> dict[str, Any]:
    """Every check, then the speed figures, then the `EXTRA` checks of the builds in `extra` (build -> library);
    the rows so far are written to `partial` after each check. `env`: MIOpen variables every worker gets (a worker
    inherits none of this process's)."""
    order = sorted(CLAIMS, key=lambda n: (n in SPECIAL or n in FINDS, n in LAST, n))
    env = env or {}
    main = Worker(lib, None, cache=cache, extra_env={**FIND_ENV, **env})
    started = time.perf_counter()
    rows: list[list[str]] = []
    seconds: dict[str, float] = {}
    functions: dict[str, dict[str, list[int]]] = {}
    version = str(main.info.get("version", "?"))
    try:
        device = main.run("ocl.common:device_label")
        speed = None
        for name in order:
            if bench and speed is None and (name in SPECIAL or name in FINDS or name in LAST):
                speed = _bench(main)  # before the checks that may hang or break the device's queue
            t0 = time.perf_counter()
            timeout = (find_timeout if name in FINDS or name in LAST or name == "ocl.checks_misc:find_default_mode"
                       else check_timeout)
            if name in SPECIAL or name in FINDS or name in LAST:
                fresh, own = SPECIAL.get(name, (False, FIND_ENV))
                w = Worker(lib, None, cache=None if fresh else cache, extra_env={**own, **env})
                try:
                    result: Any = w.call(name, timeout=timeout)
                except WorkerError as exc:
                    result = exc
                finally:
                    w.close()
                    w.cleanup()
            else:
                try:
                    result = main.call(name, timeout=timeout)
                except WorkerError as exc:
                    result = exc
            seconds[name] = round(time.perf_counter() - t0, 2)
            functions[name] = _functions(result)
            got = _rows_of(name, result, timeout)
            rows += got
            print(f"# {name}: {seconds[name]} s: " + ", ".join(sorted({r[3] for r in got})), flush=True)
            if partial is not None:
                partial.write_text(json.dumps({"device": device, "rows": rows, "seconds": seconds}, indent=1,
                                              ensure_ascii=False) + "\n")
        if bench and speed is None:
            speed = _bench(main)
        if probe:
            rows += _probe_find(lib, find_timeout)
    finally:
        main.close()
        main.cleanup()
    for build, other in (extra or {}).items():
        got, secs, funcs, more = run_extra(build, other, cache / build, find_timeout, bench)
        rows += got
        seconds.update(secs)
        functions.update(funcs)
        if more is not None and "rows" in more and speed is not None and "rows" in speed:
            speed["rows"] += more["rows"]
    sha = hashlib.sha256(lib.read_bytes()).hexdigest()
    return {"device": device, "library": f"MIOpen {version} (OpenCL backend; libMIOpen.so.1 sha256 {sha[:16]})",
            "extra": {b: str(p.name) for b, p in (extra or {}).items()}, "rows": rows, "seconds": seconds,
            "functions": functions, "total_s": round(time.perf_counter() - started, 1), "speed": speed}


def table(rows: list[list[str]]) -> str:
    lines = ["| op | dtype | path | result | reason |", "|---|---|---|---|---|"]
    lines += [f"| {op} | {dt} | {path} | {outcome} | {coverage._cell(reason)} |"
              for op, dt, path, outcome, reason, _ in rows]
    return "\n".join(lines)


def bench_only(lib: Path, cache: Path, gemm: Path | None, out: Path) -> int:
    """The speed figures alone (of the 2.17.0 library, and the LSTM step of the GEMM build if given), printed and
    written to `out`."""
    speed: dict[str, Any] = {}
    for library, check in ((lib, "ocl.bench:speed"), (gemm, "gemm.bench:speed")):
        if library is None:
            continue
        w = Worker(library, None, cache=cache if library == lib else cache.with_name(cache.name + "-gemm"),
                   extra_env=dict(FIND_ENV))
        try:
            got = _bench(w, check)
        finally:
            w.close()
            w.cleanup()
        if "rows" not in got:
            print(f"speed ({check}): {got}")
            return 1
        speed = {**got, "rows": speed.get("rows", []) + got["rows"]}
    out.write_text(json.dumps({"speed": speed}, indent=1, ensure_ascii=False) + "\n")
    print("\n" + speed_table(speed))
    return 0


def _us(v: float | None) -> str:
    return "—" if v is None else f"{v * 1e6:.1f}"


def speed_table(speed: dict[str, Any]) -> str:
    """Per case: CPU µs per call (raw, typed, op), typed/raw, op − typed (process, and the calling thread where
    measured), GPU µs per call, and the bandwidth of large cases."""
    lines = ["| case | raw CPU µs | typed CPU µs | op CPU µs | typed / raw | op − typed µs | op − typed µs (thread) "
             "| GPU µs per call (raw, typed, op) | GB/s (typed) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in speed["rows"]:
        raw, typed, op = (r.get(k) for k in ("raw", "typed", "op"))
        gpu = ", ".join(_us(s[2]) if s else "—" for s in (raw, typed, op))
        gbs = f"{r['bytes'] / typed[2] / 1e9:.0f}" if r["large"] and typed and typed[2] > 0 else "—"
        ratio = f"{typed[0] / raw[0]:.2f}x" if raw and typed else "—"
        over = f"{(op[0] - typed[0]) * 1e6:+.1f}" if op and typed else "— (a Find first)"
        thread = f"{(op[3] - typed[3]) * 1e6:+.1f}" if op and typed and len(op) > 3 and len(typed) > 3 else "—"
        lines.append(f"| {r['case']} | {_us(raw[0] if raw else None)} | {_us(typed[0] if typed else None)} | "
                     f"{_us(op[0] if op else None)} | {ratio} | {over} | {thread} | {gpu} | {gbs} |")
    return "\n".join(lines)


def page() -> str:
    """docs/real-miopen-gpu.md from docs/ocl-results/<backend>.json."""
    runs = {name: json.loads((RESULTS / f"{name}.json").read_text()) for name, _ in COLUMNS
            if (RESULTS / f"{name}.json").exists()}
    keys: list[tuple[str, str, str]] = []
    cells: dict[tuple[str, str, str], dict[str, str]] = {}
    for name, run in runs.items():
        for op, dt, path, outcome, reason, _ in run["rows"]:
            key = (op, dt, path)
            if key not in cells:
                keys.append(key)
                cells[key] = {}
            text = f"{outcome}: {reason}" if reason else outcome
            cells[key][name] = coverage._cell(text)
    heads = [title for name, title in COLUMNS if name in runs]
    out = ["# The real MIOpen OpenCL kernels (2.17.0, its MIOpenGEMM build, 3.3.0) on PoCL and on an NVIDIA GPU",
           "",
           "<!-- generated by `python -m tests.gpu.ocl_suite --page` from docs/ocl-results/*.json: do not edit -->",
           "",
           "The numeric suite of `tests/real/ocl` (typed API and runtime ops against float64 numpy references; "
           "docs/real-miopen.md says how) run on each OpenCL device by `tests/gpu/ocl_suite.py`: PoCL's CPU device "
           "here (`python -m tests.gpu.ocl_suite --name pocl ...`), NVIDIA's OpenCL driver on the device machine's "
           "GPU (`tests/gpu/ocl_nvidia.sh`, docs/internals.md: \"The real kernels on an NVIDIA GPU\"). A cell is the outcome "
           "and, where not plainly checked, the reason (a max error, a status, a hang). The RNN, GEMM-convolution and "
           "Find 2.0 rows are one row per check of tests/real/gemm and tests/real/ocl330 (run with --gemm-lib, "
           "--v330-lib); the 3.3.0 columns are the whole numeric suite again on MIOpen 3.3.0's OpenCL build.",
           ""]
    for name, title in COLUMNS:
        if name in runs:
            r = runs[name]
            out.append(f"- **{title}**: {r['device']}; {r['library']}; {len(r['rows'])} rows in {r['total_s']} s.")
    out += ["", "| op | dtype | path | " + " | ".join(heads) + " |", "|---|---|---|" + "---|" * len(heads)]
    for key in keys:
        out.append(f"| {' | '.join(coverage._cell(k) for k in key)} | "
                   + " | ".join(cells[key].get(name, "—") for name, _ in COLUMNS if name in runs) + " |")
    if CAUSES.exists():
        out += ["", CAUSES.read_text(encoding="utf-8").rstrip()]
    for name, title in COLUMNS:
        speed = runs.get(name, {}).get("speed")
        if speed and "rows" in speed:
            r0 = speed["rows"][0]
            out += ["", f"## Speed on {title}: {speed['device']} (driver {speed['driver']})", "",
                    f"Medians of {r0['rounds']} interleaved rounds; small tensors {r0['number']} calls a round "
                    "(dispatch-bound), large ones fewer (kernel-bound). CPU µs: process time of the enqueueing "
                    "loop per call (the driver's own threads included); thread: the calling thread's CPU time alone; GPU µs: between two profiling markers around the loop, per call (kernels and "
                    "the gaps between them). The runtime's convolution plans with a Find first, which does not "
                    "answer on this driver: no op column there.", "", speed_table(speed)]
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", type=Path, help="the OpenCL libMIOpen.so.1 (2.17.0)")
    ap.add_argument("--name", default="pocl", help="the results file's name (pocl, nvidia)")
    ap.add_argument("--out", type=Path, default=None, help="where <name>.json goes (default: a temporary folder)")
    ap.add_argument("--cache", type=Path, default=None, help="MIOpen's kernel caches (default: under --out)")
    ap.add_argument("--find-timeout", type=float, default=120.0, help="seconds a Find-running check may take")
    ap.add_argument("--bench", action="store_true", help="add the speed figures")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="a MIOpen variable every worker gets (workers inherit none), e.g. "
                         "MIOPEN_DEBUG_ENABLE_DEPRECATED_SOLVERS=1 for 3.3.0's convolutions off AMD GPUs")
    ap.add_argument("--bench-only", action="store_true",
                    help="the speed figures alone (no checks): <name>.json holds only them (e.g. to compare trees)")
    ap.add_argument("--probe-find", action="store_true",
                    help="add a Find run with MIOPEN_FIND_MODE=NORMAL alone (the other Find settings off)")
    ap.add_argument("--gemm-lib", type=Path, help="the MIOpenGEMM build's libMIOpen.so.1 (RNN, GEMM convolutions)")
    ap.add_argument("--v330-lib", type=Path, help="MIOpen 3.3.0's OpenCL libMIOpen.so.1 (Find 2.0)")
    ap.add_argument("--page", action="store_true", help="render docs/real-miopen-gpu.md from docs/ocl-results")
    args = ap.parse_args()
    if args.page:
        PAGE.write_text(page())
        print(f"wrote {PAGE}")
        return 0
    if args.lib is None or not args.lib.is_file():
        ap.error(f"--lib: no library at {args.lib}")
    extra = {}
    for build, path, flag in (("gemm", args.gemm_lib, "--gemm-lib"), ("v330", args.v330_lib, "--v330-lib")):
        if path is not None:
            if not path.is_file():
                ap.error(f"{flag}: no library at {path}")
            extra[build] = path
    out = args.out or Path(tempfile.mkdtemp(prefix="ocl-suite-"))
    out.mkdir(parents=True, exist_ok=True)
    if args.bench_only:
        return bench_only(args.lib, args.cache or out / "cache", extra.get("gemm"), out / f"{args.name}.json")
    result = run_suite(args.lib, args.cache or out / "cache", args.find_timeout, args.bench,
                       out / f"{args.name}.partial.json", probe=args.probe_find, extra=extra,
                       env=dict(item.split("=", 1) for item in args.env))
    (out / f"{args.name}.json").write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    print(f"\n{result['device']}: {len(result['rows'])} rows in {result['total_s']} s\n")
    print(table(result["rows"]))
    if result["speed"] and "rows" in result["speed"]:
        print("\n" + speed_table(result["speed"]))
    elif result["speed"]:
        print(f"\nspeed: {result['speed']}")
    counts: dict[str, int] = {}
    for row in result["rows"]:
        counts[row[3]] = counts.get(row[3], 0) + 1
    print("\n" + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
