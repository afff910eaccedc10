"""`miogen upgrade`: add a release to a spec directory, in phases that each say what they do and how long they took.

parse → diff → gate → abi (the ABI check of the header) → write (the spec, its record in releases.yaml, the pin)
→ each named step (make upgrade: render, venv, tests). Transactional: if a step fails or a signal ends the run,
the new spec, the records file, the pin and every --restore path are put back as they were, and the message names
the phase that failed, what was rolled back and the log holding every step's output."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING

from ..base.errors import CodegenError
from ..base.files import Interrupted
from ..spec.model import Spec
from ..spec.releases import Version
from ..spec.target import Target

if TYPE_CHECKING:
    from ..prove.abi import Report
from .transaction import SignalGuard


class StepFailed(Exception):
    """A step of `miogen upgrade` exited non-zero."""


class Phases:
    """Prints each phase as it starts and ends (with its time), and remembers which one is running."""

    def __init__(self) -> None:
        self.current = ""
        self.done: list[tuple[str, float]] = []

    @contextmanager
    def phase(self, name: str, what: str) -> Iterator[None]:
        self.current = name
        print(f"upgrade [{name}] {what}", flush=True)
        start = time.perf_counter()
        yield
        took = time.perf_counter() - start
        self.done.append((name, took))
        print(f"upgrade [{name}] done in {took:.1f} s", flush=True)

    def summary(self) -> str:
        return ", ".join(f"{name} {took:.1f} s" for name, took in self.done)


def upgrade(args: argparse.Namespace) -> int:
    with SignalGuard() as guard:
        try:
            return _upgrade(args, guard)
        except Interrupted as exc:  # before anything was written (afterwards the rollback answers)
            print(f"miogen: interrupted by {exc} before anything was written", file=sys.stderr)
            return 128 + exc.signum


def _record_text(args: argparse.Namespace, sha: str) -> str:
    return args.source or f"{args.header} (sha256 {sha[:16]}…)"


def _upgrade(args: argparse.Namespace, guard: SignalGuard) -> int:
    from ..semantics.suggest import AnnotationGateError, OpenParam, suggestion
    from ..semantics.annotations import load_annotations
    from ..semantics.resolve import resolve
    from ..spec.diff import diff, to_markdown
    from ..parse.headers import ParseOptions
    from ..parse.parser import parse_header
    from ..spec.records import ReleaseRecord, add_record, load_records, records_path
    from ..spec.releases import Releases
    from ..spec.spec_io import dumps_for, load
    from ..spec.target import load_target, target_for
    from .transaction import Snapshot

    if args.specs is None:
        raise CodegenError("no spec directory: this miogen is installed, not a checkout; pass --specs DIR (the "
                           "directory holding the committed specs, annotations.yaml and the pin file `pinned`), or "
                           "use `miogen add-release HEADER`, which adds the release to your per-user folder")
    phases = Phases()
    started = time.perf_counter()
    history = Releases.of(args.specs)
    pin_file = history.pin_file
    pinned_version = history.pinned()
    committed = history.paths
    pinned = load(committed[pinned_version])
    target = load_target(args.target) if args.target else target_for(pinned.target)
    with phases.phase("parse", f"parsing {args.header}"):
        spec = parse_header(args.header, target, ParseOptions(includes=tuple(args.includes), defines=tuple(args.defines),
                                                              beta=True, shims=not args.no_shims),
                            args.miopen_version, args.rocm_release)
    version = spec.version
    oldest = min(committed)
    if version < oldest:
        raise CodegenError(
            f"{args.header} is {target.display_name} {version}, older than every committed release (the oldest is "
            f"{oldest}): an upgrade adds a newer release or one between two committed ones. To support an older "
            f"one on purpose: make specs HEADER={args.header} MIOPEN_VERSION={version}, then make generate")
    # the committed release it is compared with: the newest older one (the pinned one for a newer release)
    base_version = max((v for v in committed if v < version), default=pinned_version)
    if version in committed:
        base_version = version
    base = pinned if base_version == pinned_version else load(committed[base_version])
    if spec == base:
        print(f"{args.header}: same API as the committed {target.display_name} {base_version}; nothing to upgrade")
        return 0
    if version in committed:
        raise CodegenError(
            f"{committed[version]} already holds {target.display_name} {version} (from a header with another API): an "
            f"upgrade adds a release and replaces none. To re-parse a committed release on purpose: "
            f"make specs HEADER={args.header} MIOPEN_VERSION={version}")
    newest = version > pinned_version  # the pin moves only forward
    with phases.phase("diff", f"{target.display_name} {base_version} → {version}"):
        print(to_markdown(diff(base, spec)))

    # the gate, on the new spec and on every committed one: the annotations must hold for all releases
    ann_path = args.specs / "annotations.yaml"
    with phases.phase("gate", f"the annotations of {ann_path} on {len(committed) + 1} releases"):
        ann = load_annotations(ann_path)
        releases = sorted([*(load(p) for p in committed.values()), spec], key=lambda sp: sp.version)
        failed: list[AnnotationGateError] = []
        for sp in releases:
            try:
                resolve(sp, ann, prefix=target.function_prefix)
            except AnnotationGateError as exc:
                failed.append(exc)
        if failed:
            open_params: list[OpenParam] = []
            for err in failed:
                print(f"miogen: {err.problems}", file=sys.stderr)
                open_params += [op for op in err.open_params if op not in open_params]
            if open_params:
                print(suggestion(tuple(open_params), ann, releases), file=sys.stderr)
            print(f"miogen: upgrade failed in phase gate; fix {ann_path}, then run the upgrade again (nothing was "
                  f"written)", file=sys.stderr)
            return 1
    abi = ""
    if not args.no_abi_check:
        with phases.phase("abi", "layout probe and call-through stub against the header (make abi-check)"):
            report = _abi(spec, ann_path, args, target)
            print(report.summary())
            if not report.ok:
                print("miogen: upgrade failed in phase abi: the bindings would not match the header's ABI "
                      "(nothing was written)", file=sys.stderr)
                return 1
            abi = report.record()

    out = args.specs / f"{version}.yaml"
    staged = out.with_name(f".{out.name}.tmp")  # written beside its place, then moved there in one step
    records_file = records_path(args.specs)
    restored = ", ".join(str(p) for p in args.restore)
    steps = [*args.step, *(("verify", cmd) for cmd in args.verify)]
    snapshot: Snapshot | None = None
    log_path = _log_path(version) if steps else Path(os.devnull)
    try:
        snapshot = Snapshot([pin_file, records_file, *args.restore])
        with phases.phase("write", f"{out}, its record in {records_file}" + (", the pin" if newest else "")):
            staged.write_text(dumps_for(spec, out), encoding="utf-8")
            os.replace(staged, out)
            old = load_records(args.specs).get(version, ReleaseRecord())
            add_record(args.specs, version, ReleaseRecord(
                shipped_in=spec.release or "", header=_record_text(args, spec.header.sha256), abi=abi,
                library=old.library))
            if newest:
                pin_file.write_text(f"{version}\n", encoding="utf-8")
            print(f"wrote {out}; " + (f"pinned {target.display_name} {version} (newest release)" if newest
                                      else f"the pinned newest release stays {pinned_version}"))
        if steps:
            print(f"upgrade: the steps' output is also in {log_path}", flush=True)
        with open(log_path, "ab") as log:
            for name, cmd in steps:
                with phases.phase(name, cmd):
                    rc = _run_logged(cmd, guard, log, name)
                    if rc != 0:
                        raise StepFailed(f"`{cmd}` failed (exit {rc})")
        guard.close()
    except BaseException as exc:
        guard.close()  # a signal now does not cut the rollback short
        if snapshot is None:  # nothing written yet (the snapshot removed its own copies)
            raise
        removed = f"removed {out}, " if out.exists() else ""
        out.unlink(missing_ok=True)
        snapshot.restore()
        why = f"interrupted by {exc}" if isinstance(exc, Interrupted) else str(exc) or type(exc).__name__
        print(f"miogen: upgrade failed in phase {phases.current}: {why}", file=sys.stderr)
        print(f"miogen: rolled back: {removed}restored {records_file}, pinned {pinned_version} again"
              + (f", restored {restored}" if restored else ""), file=sys.stderr)
        if steps:
            print(f"miogen: the log to read: {log_path}", file=sys.stderr)
        if isinstance(exc, Interrupted):
            return 128 + exc.signum
        if isinstance(exc, StepFailed):
            return 1
        raise
    finally:
        if snapshot is not None:
            snapshot.discard()
        if not staged.is_dir():
            staged.unlink(missing_ok=True)
    if steps:
        log_path.unlink(missing_ok=True)
    print(f"upgrade: added {target.display_name} {version} in {time.perf_counter() - started:.1f} s "
          f"({phases.summary()})")
    if not steps:
        print("next: make generate && make test (make upgrade does both, and rolls back on failure)")
    return 0


def _abi(spec: Spec, ann_path: Path, args: argparse.Namespace, target: Target) -> Report:
    """The ABI check of the parsed header (codegen/prove/abi.py), built in a temporary folder."""
    import tempfile

    from ..prove.abi import check

    with tempfile.TemporaryDirectory(prefix="miogen-abi-") as tmp:
        return check(spec, ann_path, args.header, target, Path(tmp), tuple(args.includes))


def _log_path(version: Version) -> Path:
    """Where the steps' output goes: a new file in the temporary folder, kept when the upgrade fails."""
    import tempfile

    fd, name = tempfile.mkstemp(prefix=f"miogen-{version}-", suffix="-upgrade.log")
    os.close(fd)
    return Path(name)


def _run_logged(cmd: str, guard: SignalGuard, log: IO[bytes], name: str) -> int:
    """Run one step (see `transaction.run_in_group`), its output shown and appended to `log`."""
    from .transaction import run_in_group

    log.write(f"=== upgrade [{name}] {cmd}\n".encode())
    log.flush()
    return run_in_group(cmd, guard, tee=(sys.stdout.buffer, log))
