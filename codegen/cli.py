"""Command line: `python -m codegen parse ...` (also installed as `miogen`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import GENERATOR_VERSION
from .errors import CodegenError
from .target import DEFAULT_TARGET


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="miogen",
        description="miogen: generate exact Python bindings for MIOpen from its miopen.h.",
    )
    ap.add_argument("--version", action="version", version=f"miogen {GENERATOR_VERSION}")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "parse",
        help="parse a miopen.h into a YAML API spec",
        description="Parse a miopen.h with libclang (as C++, inside extern \"C\") into a YAML API spec: every "
        "function, parameter, type, enum value, struct layout and opaque handle. Missing miopen/config.h, "
        "miopen/export.h or hip/hip_runtime_api.h are supplied by miogen's shims; the compiler's builtin "
        "headers are found automatically. Any clang error fails the parse with its location and a fix.",
    )
    p.add_argument("header", type=Path, metavar="HEADER", help="path of the miopen.h to parse")
    p.add_argument(
        "-I", dest="includes", action="append", type=Path, default=[], metavar="DIR",
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
        "--builtin-include", type=Path, metavar="DIR",
        help="directory with the compiler's stddef.h/stdbool.h/stdint.h (default: ask clang, gcc or cc)",
    )
    p.add_argument(
        "--target", type=Path, default=DEFAULT_TARGET, metavar="YAML",
        help=f"target facts file (default: {DEFAULT_TARGET.relative_to(DEFAULT_TARGET.parents[2])})",
    )
    p.add_argument("-o", "--output", type=Path, required=True, metavar="SPEC.yaml", help="where to write the spec")

    c = sub.add_parser(
        "check",
        help="validate spec files",
        description="Load and validate spec files; a malformed spec is reported with the YAML path of the bad key.",
    )
    c.add_argument("specs", type=Path, nargs="+", metavar="SPEC.yaml")
    c.add_argument(
        "--annotations", type=Path, metavar="YAML",
        help="also run the annotation gate with this annotations file (e.g. specs/miopen/annotations.yaml)",
    )

    r = sub.add_parser(
        "render",
        help="render a spec into Python bindings",
        description="Render a spec plus annotations into a bindings package (raw ctypes layer, typed API, .pyi). "
        "Fails at the annotation gate when a pointer parameter is unclassified or an annotation is stale.",
    )
    r.add_argument("spec", type=Path, metavar="SPEC.yaml")
    r.add_argument("--annotations", type=Path, default=DEFAULT_TARGET.parent / "annotations.yaml", metavar="YAML",
                   help="annotations file (default: specs/miopen/annotations.yaml)")
    r.add_argument("--history", type=Path, metavar="DIR",
                   help="directory of committed specs, to record the release that introduced each function")
    r.add_argument("--target", type=Path, default=DEFAULT_TARGET, metavar="YAML", help="target facts file")
    r.add_argument("-o", "--output", type=Path, required=True, metavar="DIR", help="package directory to write")

    a = sub.add_parser(
        "abi-check",
        help="prove the bindings of a header against gcc: layout probe and call-through stub",
        description="Parse HEADER (with the beta API), render its bindings, compile with g++ a layout probe "
        "(sizeof/alignof/offsetof of every struct and field, every enum value) and a stub library that records "
        "its arguments and writes known outputs; compare the probe with the ctypes layer and drive every typed "
        "wrapper through the stub. Exits 1 on any mismatch.",
    )
    a.add_argument("header", type=Path, metavar="HEADER")
    a.add_argument("--miopen-version", metavar="X.Y.Z", help="MIOpen version (default: from version.h)")
    a.add_argument("-I", dest="includes", action="append", type=Path, default=[], metavar="DIR",
                   help="include directory for the parse and the compiles; repeatable")
    a.add_argument("--annotations", type=Path, default=DEFAULT_TARGET.parent / "annotations.yaml", metavar="YAML")
    a.add_argument("--target", type=Path, default=DEFAULT_TARGET, metavar="YAML")
    a.add_argument("--keep", type=Path, metavar="DIR", help="build in DIR and keep it (default: a temp dir)")
    return ap


def _abi_check(args: argparse.Namespace) -> int:
    import tempfile

    from .abi import check
    from .parser import ParseOptions, parse_header
    from .target import load_target

    target = load_target(args.target)
    spec = parse_header(args.header, target, ParseOptions(includes=tuple(args.includes), beta=True),
                        args.miopen_version)
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="miogen-abi-"))
    workdir.mkdir(parents=True, exist_ok=True)
    report = check(spec, args.annotations, args.header, target, workdir, tuple(args.includes))
    print(report.summary())
    return 0 if report.ok else 1


def _render(args: argparse.Namespace) -> int:
    import time

    from .render import generate
    from .target import load_target

    t0 = time.perf_counter()
    files = generate(args.spec, args.annotations, load_target(args.target), args.output, args.history)
    print(f"{args.output}: {len(files)} files from {args.spec} in {time.perf_counter() - t0:.2f} s", file=sys.stderr)
    return 0


def _check(args: argparse.Namespace) -> int:
    from .annotate import load_annotations, resolve
    from .spec_io import load

    ann = load_annotations(args.annotations) if args.annotations else None
    failed = 0
    for path in args.specs:
        spec = load(path)
        if ann is not None:
            try:
                resolve(spec, ann)
            except CodegenError as exc:
                print(f"{path}: {exc}", file=sys.stderr)
                failed += 1
                continue
        beta = sum(f.beta for f in spec.functions)
        print(
            f"{path}: ok: MIOpen {spec.miopen_version}: {len(spec.functions)} functions ({beta} beta), "
            f"{len(spec.enums)} enums, {len(spec.records)} structs, {len(spec.handles)} handles"
        )
    return 2 if failed else 0


def _parse(args: argparse.Namespace) -> int:
    from .parser import ParseOptions, parse_header
    from .spec_io import dump
    from .target import load_target

    target = load_target(args.target)
    opts = ParseOptions(
        includes=tuple(args.includes),
        defines=tuple(args.defines),
        beta=args.beta,
        language=args.language,
        shims=not args.no_shims,
        builtin_include=args.builtin_include or True,
    )
    spec = parse_header(args.header, target, opts, args.miopen_version, args.rocm_release)
    dump(spec, args.output)
    beta = sum(f.beta for f in spec.functions)
    print(
        f"{args.output}: MIOpen {spec.miopen_version}: {len(spec.functions)} functions ({beta} beta), "
        f"{len(spec.enums)} enums, {len(spec.records)} structs, {len(spec.handles)} handles",
        file=sys.stderr,
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "parse":
            return _parse(args)
        if args.command == "check":
            return _check(args)
        if args.command == "render":
            return _render(args)
        if args.command == "abi-check":
            return _abi_check(args)
    except CodegenError as exc:
        print(f"miogen: error: {exc}", file=sys.stderr)
        return 2
    return 1  # pragma: no cover - argparse enforces a command
