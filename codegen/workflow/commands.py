"""What each `miogen` command does once its arguments are parsed (codegen/cli.py parses them): parse, check,
render, abi-check, diff, changes, header-version and upgrade; each returns the command's exit status."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..base.errors import CodegenError


def _peek(path: Path, key: str) -> str | None:
    """A top-level key of a spec file, read from its first lines (before a full load)."""
    import re

    try:
        head = path.read_text(encoding="utf-8", errors="replace")[:2000]
    except OSError:
        return None
    m = re.search(rf"^{key}:\s*(\S+)", head, re.M)
    return m.group(1) if m else None


def _peek_schema(path: Path) -> str | None:
    return _peek(path, "schema_version")


def diff_specs(args: argparse.Namespace) -> int:
    from ..spec.diff import diff, to_json, to_markdown
    from ..spec.spec_io import load
    from ..spec.target import target_for

    so, sn = _peek_schema(args.old), _peek_schema(args.new)
    if so and sn and so != sn:
        raise CodegenError(f"{args.old} has schema version {so} but {args.new} has {sn}: specs of different "
                           f"schema versions cannot be compared; re-parse the older header with this generator "
                           f"(`miogen parse`) so both use schema {max(so, sn)}")
    if args.old.resolve() == args.new.resolve():
        raise CodegenError(f"{args.old} was compared with itself: pass the older and the newer spec")
    to, tn = _peek(args.old, "target"), _peek(args.new, "target")
    if to and tn and to != tn:
        raise CodegenError(f"{args.old} is a {to} spec but {args.new} is a {tn} spec: only two releases of the same "
                           f"library can be compared")
    old, new = load(args.old), load(args.new)
    if old.target != new.target:  # pragma: no cover - the peek above sees it first
        raise CodegenError(f"{args.old} is a {old.target} spec but {args.new} is a {new.target} spec")
    if old == new:
        raise CodegenError(f"{args.old} and {args.new} are the same spec ({target_for(old.target).display_name} "
                           f"{old.version}, header sha256 "
                           f"{old.header.sha256[:12]}): nothing to compare")
    d = diff(old, new)
    sys.stdout.write(to_json(d) if args.format == "json" else to_markdown(d))
    if args.check and d.breaking:
        print(f"miogen: {len(d.breaking)} breaking change(s) from {d.library} {d.old} to {d.new}:", file=sys.stderr)
        for c in d.breaking:
            print(f"  {c.kind}: {c.item}: {c.detail}", file=sys.stderr)
        return 1
    return 0


def changes(args: argparse.Namespace) -> int:
    from ..spec.diff import changes_document
    from ..base.files import into, not_an_input, write_file

    output = into(args.output, "api-changes.md")
    not_an_input(output, [("SPEC.yaml", s) for s in args.specs])
    text = changes_document(list(args.specs))
    write_file(output, text)
    print(f"{output}: {len(args.specs)} releases", file=sys.stderr)
    return 0


def upgrade_release(args: argparse.Namespace) -> int:
    from ..workflow.upgrade import upgrade

    return upgrade(args)


def abi_check(args: argparse.Namespace) -> int:
    import tempfile

    from ..prove.abi import check
    from ..base.files import not_an_input
    from ..parse.headers import ParseOptions
    from ..parse.parser import parse_header
    from ..spec.target import load_target

    target = load_target(args.target)
    if args.keep:
        not_an_input(args.keep, [("HEADER", args.header), ("--annotations", args.annotations),
                                 ("--target", args.target), *(("-I", d) for d in args.includes)], tree=True)
    spec = parse_header(args.header, target, ParseOptions(includes=tuple(args.includes), defines=tuple(args.defines),
                                                          beta=True, shims=not args.no_shims), args.miopen_version)

    def run(workdir: Path) -> int:
        report = check(spec, args.annotations, args.header, target, workdir, tuple(args.includes))
        print(report.summary())
        return 0 if report.ok else 1

    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        return run(args.keep)
    with tempfile.TemporaryDirectory(prefix="miogen-abi-") as tmp:
        return run(Path(tmp))


def header_version(args: argparse.Namespace) -> int:
    from ..parse.version_header import header_version
    from ..spec.target import load_target

    print(header_version(args.header, load_target(args.target)))
    return 0


def render(args: argparse.Namespace) -> int:
    import time

    from ..base.files import not_an_input
    from ..render.package import generate
    from ..spec.spec_io import load
    from ..spec.target import load_target, target_path

    t0 = time.perf_counter()
    # a spec's file name goes into every file's banner comment (render.package.banner() escapes it too)
    for spec in args.spec:
        if not spec.name.isprintable():
            raise CodegenError(f"{spec!r}: a spec file name must be printable (it is written into the generated "
                               f"files' banner)")
    target_file = args.target
    if target_file is None:  # the spec's target, read from its head (generate() loads and checks the spec)
        name = _peek(args.spec[-1], "target") or load(args.spec[-1]).target
        target_file = target_path(name)
    target = load_target(target_file)
    annotations = args.annotations or target.path.parent / "annotations.yaml"
    not_an_input(args.output, [*(("SPEC.yaml", s) for s in args.spec), ("--annotations", annotations),
                               ("--target", target.path), ("--history", args.history)], tree=True)
    files = generate(list(args.spec), annotations, target, args.output, args.history)
    shown = args.spec[0] if len(args.spec) == 1 else f"{len(args.spec)} specs"
    print(f"{args.output}: {len(files)} files from {shown} in {time.perf_counter() - t0:.2f} s", file=sys.stderr)
    return 0


def check(args: argparse.Namespace) -> int:
    from ..semantics.suggest import AnnotationGateError
    from ..semantics.annotations import load_annotations
    from ..semantics.resolve import resolve
    from ..spec.spec_io import load
    from ..spec.target import target_for

    ann = load_annotations(args.annotations) if args.annotations else None
    specs = [load(path) for path in args.specs]
    failed = 0
    for path, spec in zip(args.specs, specs, strict=True):
        if ann is not None:
            try:
                resolve(spec, ann)
            except AnnotationGateError as exc:  # the annotations to add, valid for every spec checked
                print(f"{path}: {exc.across(specs)}", file=sys.stderr)
                failed += 1
                continue
            except CodegenError as exc:
                print(f"{path}: {exc}", file=sys.stderr)
                failed += 1
                continue
        if not args.summary:
            beta = sum(f.beta for f in spec.functions)
            print(
                f"{path}: ok: {target_for(spec.target).display_name} {spec.version}: {len(spec.functions)} functions "
                f"({beta} beta), "
                f"{len(spec.enums)} enums, {len(spec.records)} structs, {len(spec.handles)} handles"
            )
    if args.summary and not failed:
        versions = sorted(s.version for s in specs)
        print(f"check: {len(specs)} spec(s) valid ({', '.join(map(str, versions))})"
              + (", annotation gate passed" if ann is not None else ""))
    return 2 if failed else 0


def parse(args: argparse.Namespace) -> int:
    from ..base.files import into, not_an_input
    from ..parse.headers import ParseOptions
    from ..parse.parser import parse_header
    from ..parse.version_header import read_version_header
    from ..spec.spec_io import dump
    from ..spec.target import load_target

    target = load_target(args.target)
    if args.builtin_include is not None:
        from ..parse.clang_env import _has_builtins

        if not _has_builtins(args.builtin_include):
            raise CodegenError(f"--builtin-include {args.builtin_include}: no stddef.h, stdbool.h and stdint.h there; "
                               f"pass a compiler's builtin include directory (e.g. `gcc -print-file-name=include`)")
    opts = ParseOptions(
        includes=tuple(args.includes),
        defines=tuple(args.defines),
        beta=args.beta,
        language=args.language,
        shims=not args.no_shims,
        builtin_include=args.builtin_include or True,
    )
    inputs: list[tuple[str, Path | None]] = [("HEADER", args.header), ("--target", args.target),
                                             ("--builtin-include", args.builtin_include),
                                             *(("-I", d) for d in args.includes)]
    if not (args.output.endswith(("/", os.sep)) or os.path.isdir(args.output)):
        not_an_input(args.output, inputs)  # before the parse, where the output's name is known
    spec = parse_header(args.header, target, opts, args.miopen_version, args.rocm_release)
    output = into(args.output, f"{spec.version}.yaml")  # a spec directory: named after the version
    not_an_input(output, [*inputs, ("the version header", read_version_header(args.header, target)[0])])
    dump(spec, output)
    beta = sum(f.beta for f in spec.functions)
    print(
        f"{output}: {target.display_name} {spec.version}: {len(spec.functions)} functions ({beta} beta), "
        f"{len(spec.enums)} enums, {len(spec.records)} structs, {len(spec.handles)} handles",
        file=sys.stderr,
    )
    return 0
