"""The generated bindings against the real Debian-built MIOpen 3.x releases (see tests/real_debian.py).

Same worker design as tests/test_real_miopen.py (nothing real in this process), with the workers on the Debian
root's own loader and Python and the stand-in GPU (tests/fixtures/standin_gpu) as the HIP runtime. Per release:
- every function of the bound release's typed API is called (`checks_debian.sweep`, forked batches: a death
  costs one child); the outcome of each is the coverage table of docs/real-miopen.md, kept current here;
- the focused checks (`checks_debian.CHECKS`) compare answers with MIOpen's formulas and pin what the stand-in
  device gets (solution lists, states sizes);
- the 2.17.0 checks (tests/real/checks_*.py) whose expectations still hold run too.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from . import real_debian
from .helpers import REPO
from .real import checks_debian, common, coverage  # noqa: F401  (coverage imports the 2.17.0 checks: COVERS)
from .real.client import Died, Result, Worker, WorkerError

LIBS = real_debian.libraries()
IDS = [lib.expected_release or lib.upstream for lib in LIBS]

#: what each release answers in the focused checks that return values (the stand-in gfx90a device: 104 CUs)
EXPECTED: dict[str, dict[str, Any]] = {
    "3.4.0": {
        "version_and_errors": {"version": "3.4.0"},
        # per direction a GEMM solver (algorithm 0; forward: 91, its workspace 7225344 bytes = the im2col buffer
        # of one image, 64*3*3 x 56*56 floats) and a naive direct one (algorithm 1: 85, 86, 87)
        "conv_solutions": {"fwd": [(91, 0, 7225344), (85, 1, 0)], "bwd": [(97, 0), (86, 1)],
                           "wrw": [(102, 0), (87, 1)]},
        "rnn_sizes": {"params_bytes": 59392},
        "dropout_sizes": {"states": 786432, "reserve": 512},
        "reduce_sizes": {"workspace": 4096, "indices": 0},
    },
    "3.5.1": {
        "version_and_errors": {"version": "3.5.1"},
        # 3.5.1 adds solution 84 (algorithm 3: Winograd) in every direction, listed first
        "conv_solutions": {"fwd": [(84, 3, 0), (91, 0, 7225344), (85, 1, 0)], "bwd": [(84, 3), (97, 0), (86, 1)],
                           "wrw": [(84, 3), (102, 0), (87, 1)]},
        "rnn_sizes": {"params_bytes": 59392},
        "dropout_sizes": {"states": 655360, "reserve": 512},
        "reduce_sizes": {"workspace": 4096, "indices": 0},
    },
}
#: the 2.17.0 checks whose expectations are 2.17.0's own (status codes, descriptor rules and solver lists that
#: changed by 3.x; not re-derived for 3.x): the others must hold on every 3.x release
SPECIFIC_TO_2_17 = {
    "checks_conv:attributes", "checks_conv:output_dims_nd", "checks_conv:solution_errors",
    "checks_conv:solutions_consistent", "checks_errors:status_mapping", "checks_layers:pooling_rank_errors",
    "checks_misc:ctc", "checks_misc:dropout", "checks_misc:fusion_plans", "checks_misc:handle_basics",
    "checks_misc:reduction", "checks_misc:version_and_error_strings", "checks_rnn:sizes", "checks_rnn:weight_layout",
    "checks_runtime:conv_output_dims_vs_library", "checks_runtime:deterministic_on_2_17", "checks_runtime:features",
    "checks_runtime:handle_pool", "checks_runtime:version_policies", "checks_tensor:bad_data_type_raw",
    "checks_tensor:bad_lengths_and_strides", "checks_tensor:four_d_round_trip", "checks_tensor:four_d_strided",
    "checks_tensor:nd_round_trip", "checks_tensor:zero_dims_and_fresh",
}


@pytest.fixture(scope="session")
def debian_env(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the stand-in GPU's folder, the assembled package's folder), built once."""
    real_debian.require()
    base = tmp_path_factory.mktemp("real_debian")
    return real_debian.build_standin(LIBS[0].root, base / "standin"), real_debian.assemble_package(base / "pkg")


@pytest.fixture(scope="module", params=LIBS or [None], ids=IDS or ["no-root"])
def deb(request: pytest.FixtureRequest, debian_env: tuple[Path, Path]) -> Iterator[tuple[real_debian.Library, Worker]]:
    lib: real_debian.Library = request.param
    standin, pkg = debian_env
    try:
        w = Worker(lib.path, standin / lib.hip_major / lib.hip_soname,
                   python=real_debian.interpreter(lib.root, standin / lib.hip_major),
                   extra_env={"PYTHONPATH": str(pkg), "MIOGEN_REAL_BIND_ANYWAY": "1"})
    except RuntimeError as exc:
        pytest.fail(str(exc))
    try:
        yield lib, w
    finally:
        w.close()
        w.cleanup()


def _run(w: Worker, name: str, *args: Any) -> Any:
    try:
        result = w.call(name, *args)
    except WorkerError as exc:
        pytest.fail(str(exc), pytrace=False)
    if isinstance(result, Died):
        pytest.fail(f"{name}: the worker {result.describe()}\n{result.stderr_tail}", pytrace=False)
    return result.value


def _release(deb: tuple[real_debian.Library, Worker]) -> str:
    return str(deb[1].info["version"])


def test_binds_the_release(deb: tuple[real_debian.Library, Worker]) -> None:
    """The library reports the MIOpen release its Debian version ships; it is bound to its own committed release,
    or (until that is committed) to the nearest one, the refusal recorded."""
    from miopen._generated._support import RELEASES

    lib, w = deb
    if lib.expected_release:
        assert w.info["version"] == lib.expected_release
    version = str(w.info["version"])
    if version in RELEASES:
        assert (w.info["bound"], w.info["refused"]) == (version, None)
    else:
        assert str(w.info["bound"]).rsplit(".", 1)[0] <= version.rsplit(".", 1)[0]
    assert w.info["python"] >= "3.11"


@pytest.mark.parametrize("name", sorted(checks_debian.CHECKS))
def test_focused(deb: tuple[real_debian.Library, Worker], name: str) -> None:
    value = _run(deb[1], f"checks_debian:{name}")
    want = EXPECTED.get(_release(deb), {}).get(name)
    if want is not None:
        assert value == want
    result = deb[1].results[f"checks_debian:{name}"]
    assert isinstance(result, Result)
    seen = {fn for fn, caller in result.calls if caller.startswith("miopen._generated")}
    assert set(checks_debian.CHECKS[name]) <= seen


def test_data_types_reach_c(deb: tuple[real_debian.Library, Worker]) -> None:
    """Every data type the bound release declares reaches C as its own value and is sized by its name's size."""
    sizes = _run(deb[1], "checks_debian:data_types_reach_c")
    for value, (name, size) in sizes.items():
        if name in checks_debian.ITEMSIZE:
            assert size == checks_debian.ITEMSIZE[name], (value, name)


@pytest.mark.parametrize("name", sorted(set(common.COVERS) - SPECIFIC_TO_2_17))
def test_2_17_check_holds(deb: tuple[real_debian.Library, Worker], name: str) -> None:
    _run(deb[1], name)


def sweep(worker: Worker) -> dict[str, str]:
    """Every function's outcome, in a fresh worker of its own (what ran before must not change an outcome); a
    death is recorded and the rest go on in a new fork."""
    w = Worker(worker.library, worker.hip, python=worker.python, extra_env=worker.extra_env)
    try:
        return _sweep(w)
    finally:
        w.close()
        w.cleanup()


def _sweep(w: Worker) -> dict[str, str]:
    todo = sorted(_run(w, "checks_debian:functions"))
    record = w.trace.with_name("sweep.txt")
    record.write_text("")
    out: dict[str, str] = {}
    while todo:
        result = w.call("checks_debian:sweep", todo, str(record), fork=True, timeout=240)
        for line in record.read_text().splitlines():
            name, outcome = line.split("\t", 1)
            out[name] = outcome
        if isinstance(result, Died):
            # the function it died in: the first one not yet recorded
            case = next(name for name in todo if name not in out)
            assert result.in_function is not None, f"{case}: the worker {result.describe()} outside MIOpen"
            out[case] = f"died ({result.signal_name}) in {result.in_function}"
            todo = todo[todo.index(case) + 1:]
            continue
        assert isinstance(result, Result)
        break
    return out


_SWEEPS: dict[str, dict[str, str]] = {}


def test_every_function_called(deb: tuple[real_debian.Library, Worker]) -> None:
    """Each function of the bound release is called through the typed API with valid arguments: none is refused by
    our own checks, and each outcome is MIOpen's (a status, success, or a missing export)."""
    outcomes = sweep(deb[1])
    _SWEEPS[_release(deb)] = outcomes
    assert [f for f, o in outcomes.items() if o.startswith(("refused by the typed API", "not reached"))] == []


def markdown(release: str, bound: str, outcomes: dict[str, str]) -> str:
    ok = sum(1 for o in outcomes.values() if o == "miopenStatusSuccess")
    lines = [f"MIOpen {release} (bound to the bindings of {bound}): {len(outcomes)} functions called, {ok} succeed.",
             "", "| function | outcome with the stand-in GPU |", "|---|---|"]
    lines += [f"| `{f}` | {o} |" for f, o in sorted(outcomes.items())]
    return "\n".join(lines) + "\n"


def test_docs_coverage_table_is_current(deb: tuple[real_debian.Library, Worker]) -> None:
    """docs/real-miopen.md carries each release's sweep between its markers (MIOGEN_UPDATE_GOLDEN=1 rewrites)."""
    release = _release(deb)
    outcomes = _SWEEPS.get(release) or sweep(deb[1])
    doc = REPO / "docs" / "real-miopen.md"
    text = doc.read_text()
    start, end = f"<!-- debian {release} coverage: tests/test_real_debian.py -->\n", f"<!-- end of {release} -->"
    table = markdown(release, str(deb[1].info["bound"]), outcomes)
    if start not in text:
        if os.environ.get("MIOGEN_UPDATE_GOLDEN") == "1":
            doc.write_text(text.rstrip("\n") + f"\n\n### MIOpen {release}\n\n{start}{table}{end}\n")
            return
        pytest.fail(f"docs/real-miopen.md has no table for {release}; run with MIOGEN_UPDATE_GOLDEN=1")
    head, rest = text.split(start)
    _, tail = rest.split(end)
    want = head + start + table + end + tail
    if os.environ.get("MIOGEN_UPDATE_GOLDEN") == "1":
        doc.write_text(want)
        return
    assert text == want, "docs/real-miopen.md: the table is stale; run with MIOGEN_UPDATE_GOLDEN=1"


def test_setup_script() -> None:
    """scripts/real_miopen_debian.sh parses, answers --help, refuses unknown options."""
    script = REPO / "scripts" / "real_miopen_debian.sh"
    subprocess.run(["bash", "-n", str(script)], check=True)
    helped = subprocess.run(["bash", str(script), "--help"], capture_output=True, text=True, check=True)
    assert "--cache DIR" in helped.stdout and "--offline" in helped.stdout
    bad = subprocess.run(["bash", str(script), "--bogus"], capture_output=True, text=True)
    assert bad.returncode != 0 and "unknown option: --bogus" in bad.stderr
