"""Command line: `python -m miogen parse ...` (also installed as `miogen`): the arguments of each command, parsed
and handed to what runs it (codegen/workflow/commands.py, upgrade, add-release, audit); errors printed without a traceback."""

from __future__ import annotations

import argparse
import gc
import os
import signal
import sys
from typing import TYPE_CHECKING, Any

from . import GENERATOR_VERSION
from .base import gcpolicy
from .base.errors import CodegenError
from .workflow import commands
from .base.files import Interrupted, in_dir, in_file, in_path, interrupts, out_dir, out_file
from .spec.target import DEFAULT_TARGET, SPECS_DIR

if TYPE_CHECKING:
    from collections.abc import Callable


def _columns() -> int:
    """The terminal's width as `shutil.get_terminal_size()` tells it: $COLUMNS, else standard output's terminal,
    else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 80
    return columns


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's help layout, its width found without importing shutil (argparse's own formatter does, and with
    bz2, lzma and zlib that costs every command a few milliseconds)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position, _columns() - 2 if width is None else width)


class _ArgumentParser(argparse.ArgumentParser):
    """argparse's parser with `_HelpFormatter` (its subparsers are of this class too)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)


def _parse_parser(sub: Any) -> None:
    """The `parse` subcommand."""
    p = sub.add_parser(
        "parse",
        help="parse a miopen.h into a YAML API spec",
        description="Parse a miopen.h with libclang (as C++, inside extern \"C\") into a YAML API spec: every "
        "function, parameter, type, enum value, struct layout and opaque handle. Missing miopen/config.h, "
        "miopen/export.h or hip/hip_runtime_api.h are supplied by miogen's shims; the compiler's builtin "
        "headers are found automatically. Any clang error fails the parse with its location and a fix.",
    )
    p.add_argument("header", type=in_file, metavar="HEADER", help="path of the miopen.h to parse")
    p.add_argument(
        "-I", dest="includes", action="append", type=in_dir, default=[], metavar="DIR",
        help="add DIR to the include path (e.g. /opt/rocm/include); repeatable; searched before miogen's shims",
    )
    p.add_argument(
        "-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
        help="define a preprocessor macro for the parse; repeatable",
    )
    p.add_argument(
        "--beta", action="store_true",
        help="include the beta API (defines the target's beta macro, MIOPEN_BETA_API); the spec flags beta "
        "functions, enums and enum constants",
    )
    p.add_argument(
        "--miopen-version", metavar="X.Y.Z",
        help="MIOpen version of the header (default: read from a version.h beside the header)",
    )
    p.add_argument("--rocm-release", metavar="NAME", help="ROCm release to record (default: from the target's table)")
    p.add_argument(
        "--language", choices=("c++", "c"), default="c++",
        help="parse as C++ (default; needed from MIOpen 2.20 on) or as C",
    )
    p.add_argument(
        "--no-shims", action="store_true",
        help="do not fall back to miogen's minimal config.h/export.h/hip_runtime_api.h shims",
    )
    p.add_argument(
        "--builtin-include", type=in_dir, metavar="DIR",
        help="directory with the compiler's stddef.h/stdbool.h/stdint.h (default: ask clang, gcc or cc)",
    )
    p.add_argument(
        "--target", type=in_file, default=DEFAULT_TARGET, metavar="YAML",
        help=f"target facts file (default: {DEFAULT_TARGET.relative_to(DEFAULT_TARGET.parents[2])})",
    )
    p.add_argument("-o", "--output", type=out_file, required=True, metavar="SPEC.yaml",
                   help="where to write the spec (an existing directory, or a path ending in /: <version>.yaml in it)")


def _check_parser(sub: Any) -> None:
    """The `check` subcommand."""
    c = sub.add_parser(
        "check",
        help="validate spec files",
        description="Load and validate spec files; a malformed spec is reported with the YAML path of the bad key.",
    )
    c.add_argument("specs", type=in_file, nargs="+", metavar="SPEC.yaml")
    c.add_argument(
        "--annotations", type=in_file, metavar="YAML",
        help="also run the annotation gate with this annotations file (e.g. specs/miopen/annotations.yaml)",
    )
    c.add_argument("--summary", action="store_true", help="one line for all specs instead of one per spec")


def _header_version_parser(sub: Any) -> None:
    """The `header-version` subcommand."""
    hv = sub.add_parser(
        "header-version",
        help="print the release a header declares (its version.h)",
        description="Print X.Y.Z as the version header installed beside HEADER declares it (for MIOpen: "
        "miopen/version.h); exits 2 with the reason when there is none or it was never configured by CMake.",
    )
    hv.add_argument("header", type=in_file, metavar="HEADER")
    hv.add_argument("--target", type=in_file, default=DEFAULT_TARGET, metavar="YAML")


def _render_parser(sub: Any) -> None:
    """The `render` subcommand."""
    r = sub.add_parser(
        "render",
        help="render a spec into Python bindings",
        description="Render a spec plus annotations into a bindings package (raw ctypes layer, typed API, .pyi). "
        "Fails at the annotation gate when a pointer parameter is unclassified or an annotation is stale.",
    )
    r.add_argument("spec", type=in_file, nargs="+", metavar="SPEC.yaml",
                   help="specs of one target, one per release (each gets a sub-package; the newest gives the .pyi)")
    r.add_argument("--annotations", type=in_file, metavar="YAML",
                   help="annotations file (default: specs/<the spec's target>/annotations.yaml)")
    r.add_argument("--history", type=in_dir, metavar="DIR",
                   help="directory of committed specs, to record the release that introduced each function")
    r.add_argument("--target", type=in_file, metavar="YAML",
                   help="target facts file (default: specs/<the spec's target>/target.yaml)")
    r.add_argument("-o", "--output", type=out_dir, required=True, metavar="DIR",
                   help="package directory to write (all or nothing: built beside it, then swapped in)")


def _abi_check_parser(sub: Any) -> None:
    """The `abi-check` subcommand."""
    a = sub.add_parser(
        "abi-check",
        help="prove the bindings of a header against gcc: layout probe and call-through stub",
        description="Parse HEADER (with the beta API), render its bindings, compile with g++ a layout probe "
        "(sizeof/alignof/offsetof of every struct and field, every enum value) and a stub library that records "
        "its arguments and writes known outputs; compare the probe with the ctypes layer and drive every typed "
        "wrapper through the stub. Exits 1 on any mismatch.",
    )
    a.add_argument("header", type=in_file, metavar="HEADER")
    a.add_argument("--miopen-version", metavar="X.Y.Z", help="MIOpen version (default: from version.h)")
    a.add_argument("-I", dest="includes", action="append", type=in_dir, default=[], metavar="DIR",
                   help="include directory for the parse and the compiles; repeatable")
    a.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                   help="define a preprocessor macro for the parse; repeatable")
    a.add_argument("--no-shims", action="store_true", help="do not fall back to miogen's shims")
    a.add_argument("--annotations", type=in_file, default=DEFAULT_TARGET.parent / "annotations.yaml", metavar="YAML")
    a.add_argument("--target", type=in_file, default=DEFAULT_TARGET, metavar="YAML")
    a.add_argument("--keep", type=out_dir, metavar="DIR",
                   help="build in DIR and keep it (default: a temp dir, removed afterwards)")


def _diff_parser(sub: Any) -> None:
    """The `diff` subcommand."""
    d = sub.add_parser(
        "diff",
        help="API changes between two specs",
        description="Compare two specs: functions, parameters (added, removed, renamed, retyped, reordered), "
        "return types, default arguments, enums and constants (renumbered constants stand out), struct layouts, "
        "beta/stable moves, handle types. With --check, exit 1 when anything breaks existing callers.",
    )
    d.add_argument("old", type=in_file, metavar="OLD.yaml")
    d.add_argument("new", type=in_file, metavar="NEW.yaml")
    d.add_argument("--format", choices=("md", "json"), default="md", help="output format (default: md)")
    d.add_argument("--check", action="store_true", help="exit 1 if any change is breaking (additions alone: 0)")


def _changes_parser(sub: Any) -> None:
    """The `changes` subcommand."""
    c2 = sub.add_parser("changes", help="write docs/api-changes.md from the committed specs",
                        description="One section per consecutive pair of releases, and a coverage table "
                        "(functions per group per release).")
    c2.add_argument("specs", type=in_file, nargs="+", metavar="SPEC.yaml")
    c2.add_argument("-o", "--output", type=out_file, required=True, metavar="FILE.md",
                    help="where to write it (an existing directory, or a path ending in /: api-changes.md in it)")


def _upgrade_parser(sub: Any) -> None:
    """The `upgrade` subcommand."""
    u = sub.add_parser(
        "upgrade",
        help="add a new release: parse its miopen.h, diff, gate, then write and pin its spec",
        description="Parse HEADER, print the API diff against the pinned (newest) release and run the annotation "
        "gate on the new spec and every committed one; unclassified parameters are listed with the annotations "
        "to add, valid for every release, then the ABI check of HEADER. Only then is specs/<target>/<version>.yaml "
        "added with its record in releases.yaml, and pinned. Each --step runs afterwards, in a process group of its "
        "own (make upgrade: render, venv, tests), its output kept in a log; each phase prints its time. If one "
        "fails, or SIGINT, SIGTERM or SIGHUP ends the run (the running command's group is ended first; exit status "
        "128 + the signal's number), the new spec, the records, the pin and every --restore path are put back as "
        "they were, and the message names the phase and the log. Nothing is replaced: a release already committed "
        "is refused.",
    )
    u.add_argument("header", type=in_file, metavar="HEADER")
    u.add_argument("--miopen-version", metavar="X.Y.Z", help="version of HEADER (default: from version.h)")
    u.add_argument("-I", dest="includes", action="append", type=in_dir, default=[], metavar="DIR")
    u.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]")
    u.add_argument("--no-shims", action="store_true", help="do not fall back to miogen's shims")
    u.add_argument("--specs", type=in_dir, default=SPECS_DIR, metavar="DIR",
                   help="spec directory holding the committed specs, annotations.yaml and the pin file `pinned` "
                   "(default: specs/miopen of this checkout)")
    u.add_argument("--target", type=in_file, metavar="YAML", help="target facts file (default: the pinned spec's)")
    u.add_argument("--rocm-release", metavar="NAME", help="the ROCm release it shipped in, for its record "
                   "(default: from releases.yaml beside the specs, else none)")
    u.add_argument("--source", metavar="TEXT", help="where the header came from, for its record in releases.yaml "
                   "(default: the header's path and sha256)")
    u.add_argument("--step", nargs=2, action="append", default=[], metavar=("NAME", "COMMAND"),
                   help="a named shell command to run once the spec is in place (make upgrade: render, venv, tests); "
                   "repeatable, in order; any failure rolls back")
    u.add_argument("--verify", action="append", default=[], metavar="COMMAND",
                   help="an unnamed --step (its phase is called verify)")
    u.add_argument("--no-abi-check", action="store_true",
                   help="skip the ABI check of HEADER (layout probe and call-through stub; needs a C compiler)")
    u.add_argument("--restore", action="append", type=in_path, default=[], metavar="PATH",
                   help="a file or directory the --verify commands may rewrite (generated/, docs/...): restored "
                   "on failure; repeatable")

def _add_release_parser(sub: Any) -> None:
    """The `add-release` subcommand."""
    a = sub.add_parser(
        "add-release",
        help="add the release of your MIOpen to the installed package (no checkout needed)",
        description="Parse HEADER (the miopen.h of the MIOpen you have), diff it against the newest older release "
        "this miogen ships and run the annotation gate on it, then render its release sub-package into your "
        "per-user releases folder ($MIOGEN_RELEASES_PATH, else $XDG_DATA_HOME or ~/.local/share, + "
        "miogen/releases/<target>). The installed `import miopen` binds it to a library of exactly that version; "
        "`python -m miopen` lists it.",
    )
    a.add_argument("header", type=in_file, metavar="HEADER")
    a.add_argument("--miopen-version", metavar="X.Y.Z", help="version of HEADER (default: from version.h)")
    a.add_argument("--rocm-release", metavar="NAME", help="the ROCm release it shipped in (shown by python -m miopen)")
    a.add_argument("-I", dest="includes", action="append", type=in_dir, default=[], metavar="DIR")
    a.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]")
    a.add_argument("--no-shims", action="store_true", help="do not fall back to miogen's shims")
    a.add_argument("--specs", type=in_dir, metavar="DIR", help="the committed specs to compare with (default: the "
                   "ones this miogen ships)")
    a.add_argument("--target-name", default="miopen", metavar="NAME", help="the target (default: miopen)")
    a.add_argument("-o", "--output", type=out_dir, metavar="DIR",
                   help="the releases folder of the target (default: the per-user one)")


def _audit_parser(sub: Any) -> None:
    """The `audit` subcommand (its module, heavy to import, is loaded only when it runs)."""
    a = sub.add_parser(
        "audit",
        help="compare the annotations with what the C++ implementation does with each pointer parameter",
        description="Index the implementation under SRC (a source checkout's root), trace every pointer and handle "
        "parameter of every C function of the spec through its definition and the functions it is passed to, and "
        "compare what the code does (written, read as a type, device memory, NULL handled or rejected, read in "
        "groups of k, ...) with the resolved annotations. Method and limits: docs/audit.md.",
    )
    a.add_argument("source", type=in_dir, metavar="SRC", help="root of the implementation's source tree")
    a.add_argument("--spec", type=in_file, required=True, metavar="SPEC.yaml", help="the release's spec")
    a.add_argument("--annotations", type=in_file, metavar="YAML",
                   help="annotations file (default: specs/<target>/annotations.yaml)")
    a.add_argument("--notes", type=in_file, metavar="YAML",
                   help="audit notes: explanations and manual findings (default: audit-notes.yaml beside the "
                   "annotations; absent means none)")
    a.add_argument("--idioms", type=in_file, metavar="YAML",
                   help="the target's source idioms (default: audit-idioms.yaml beside the annotations)")
    a.add_argument("--depth", type=int, default=3, metavar="N", help="calls followed below the C function (default 3)")
    a.add_argument("--source-label", metavar="TEXT", help="how the report names the sources (default: SRC's name)")
    a.add_argument("--format", choices=("md", "json"), default="md", help="output format (default: md)")
    a.add_argument("--check", action="store_true", help="exit 1 when a disagreement is unexplained")
    a.add_argument("-o", "--output", type=out_file, metavar="FILE",
                   help="write the report here (an existing directory, or a path ending in /: semantics-audit.md or .json in it; default: stdout)")


_COMMANDS: dict[str, Callable[[Any], None]] = {
    "parse": _parse_parser,
    "check": _check_parser,
    "header-version": _header_version_parser,
    "render": _render_parser,
    "abi-check": _abi_check_parser,
    "diff": _diff_parser,
    "changes": _changes_parser,
    "upgrade": _upgrade_parser,
    "add-release": _add_release_parser,
    "audit": _audit_parser,
}


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; given the `command` the arguments name, with only that one's subparser (building
    all of them takes milliseconds a short command need not spend)."""
    ap = _ArgumentParser(
        prog="miogen",
        description="miogen: generate exact Python bindings for MIOpen from its miopen.h.",
    )
    ap.add_argument("--version", action="version", version=f"miogen {GENERATOR_VERSION}")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, add in _COMMANDS.items():
        if command is None or name == command:
            add(sub)
    return ap


def run() -> int:
    """The `miogen` command (and `python -m miogen`): `main()`; then the process ends, so what the command made is
    frozen and the collections of an interpreter's shutdown do not walk it (about 7% of a parse), where one runs:
    `__main__.end` skips the shutdown after a command that returns, not after one that raises. Atexit handlers
    still run; objects left in reference cycles are not collected."""
    try:
        return main()
    finally:
        gc.freeze()


def main(argv: list[str] | None = None) -> int:
    # fewer collector passes over the objects a command keeps (codegen/base/gcpolicy.py); SIGTERM and SIGHUP
    # interrupt like SIGINT, so an output being written rolls back (codegen/base/files.py)
    with gcpolicy.batch(), interrupts():
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    for stream in (sys.stdout, sys.stderr):  # a path of any bytes prints escaped, never a UnicodeEncodeError
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    words = sys.argv[1:] if argv is None else argv
    args = _parser(words[0] if words and words[0] in _COMMANDS else None).parse_args(words)
    try:
        if args.command == "parse":
            return commands.parse(args)
        if args.command == "check":
            return commands.check(args)
        if args.command == "render":
            return commands.render(args)
        if args.command == "abi-check":
            return commands.abi_check(args)
        if args.command == "diff":
            return commands.diff_specs(args)
        if args.command == "changes":
            return commands.changes(args)
        if args.command == "upgrade":
            return commands.upgrade_release(args)
        if args.command == "add-release":
            from .workflow.addrelease import add_release

            return add_release(args)
        if args.command == "header-version":
            return commands.header_version(args)
        if args.command == "audit":
            from .audit import run as run_audit

            return run_audit(args)
    except CodegenError as exc:
        print(f"miogen: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # unwritable output, a directory where a file belongs, ...
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"miogen: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # SIGINT, SIGTERM, SIGHUP (files.interrupts)
        signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
        output = exc.output if isinstance(exc, Interrupted) else None
        print(f"miogen: interrupted ({signal.Signals(signum).name})"
              + (f": {output} is as it was" if output is not None else ""), file=sys.stderr)
        return 128 + signum
    return 1  # pragma: no cover - argparse enforces a command
