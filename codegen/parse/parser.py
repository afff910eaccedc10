"""libclang -> model: parse a miopen.h into a `Spec`.

The header is parsed as C++ (from MIOpen 2.20 it is valid only as C++), descending into
`extern "C"`. With the beta API on it is parsed once, with the beta macro, and what lies in
the macro's `#ifdef` blocks is flagged beta (functions, enums, constants; codegen/parse/conditionals.py).
Where those blocks cannot decide it exactly, it is parsed twice, with and without the macro, and
whatever only the beta parse declares is flagged beta.
Any diagnostic of error severity fails the parse: a half-resolved header silently turns
unknown types into `int`.
"""

from __future__ import annotations

from pathlib import Path

from ..base.record import replace
from .. import GENERATOR_VERSION
from ..spec import rules, validate
from .clang_env import cindex
from ..base.digest import sha256
from ..base.errors import CodegenError, HeaderError
from ..spec.model import SCHEMA_VERSION, HeaderInfo, ParseInfo, Spec
from ..spec.records import ReleaseRecord, load_records
from ..spec.releases import Version
from ..spec.target import EXPORTED_FILE, Target
from .beta import flag_beta, one_pass_beta
from .builder import Builder, build_spec, stable_names
from .headers import INCLUDE_RULE, ParseOptions, check_includes, clang_args, read_header
from .unit import top_level, translation_unit
from .version_header import detect_version, header_version


def parse_header(
    header: Path,
    target: Target,
    opts: ParseOptions = ParseOptions(),
    version: str | None = None,
    release: str | None = None,
) -> Spec:
    """Parse `header` into a spec (see module doc)."""
    header = header.resolve() if header.exists() else header
    data, text = read_header(header, target)
    try:
        check_includes(header, data, clang_args(opts, target, opts.beta))
    except HeaderError as exc:
        raise HeaderError(f"{exc}\n  fix: {INCLUDE_RULE}; remove the include, or put the folder of the real header first "
                          f"on the include path (-I)") from None
    if version is None:
        release_version = header_version(header, target)
    else:
        try:
            release_version = Version.parse(version)
        except CodegenError:
            raise HeaderError(f"--miopen-version: expected X.Y.Z (three numbers); got {version!r}") from None
    installed = detect_version(header, target)
    if installed is not None and installed != release_version:
        raise HeaderError(f"--miopen-version {release_version} disagrees with {header.parent / str(target.version_header)}"
                          f", which says {installed}; leave the option out or fix it")
    items = one_pass_beta(header, text, opts, target) if opts.beta else None
    pch_text = text if opts.preamble else None
    if items is not None:
        pass
    elif opts.beta:
        # the two parses run side by side: libclang releases the GIL while it parses
        from concurrent.futures import ThreadPoolExecutor  # only here: its import costs a tenth of a parse

        with ThreadPoolExecutor(max_workers=2) as pool:
            stable_tu = pool.submit(translation_unit, header, clang_args(opts, target, False), target, pch_text)
            beta_tu = translation_unit(header, clang_args(opts, target, True), target, pch_text)
            items = build_spec(beta_tu, header, text, target)
            items = flag_beta(items, stable_names(stable_tu.result(), header, target.api_headers))
    else:
        items = build_spec(translation_unit(header, clang_args(opts, target, False), target, pch_text), header, text,
                           target)
    defines = (*target.default_defines, *opts.defines, *((target.beta_macro,) if opts.beta else ()))
    spec = Spec(
        schema_version=SCHEMA_VERSION,
        generator_version=GENERATOR_VERSION,
        target=target.name,
        version=release_version,
        release=release or load_records(target.path.parent).get(release_version, ReleaseRecord()).shipped_in or None,
        header=HeaderInfo(name=header.name, sha256=sha256(data).hexdigest()),
        parse=ParseInfo(language=opts.language, beta=opts.beta, defines=defines),
        handles=tuple(items["handles"]),
        typedefs=tuple(items["typedefs"]),
        enums=tuple(items["enums"]),
        records=tuple(items["records"]),
        callbacks=tuple(items["callbacks"]),
        functions=tuple(items["functions"]),
    )
    spec = add_exported(spec, header, opts, target)
    try:
        validate.check_model(replace(spec, handles=(), typedefs=(), enums=(), records=(), callbacks=(), functions=()))
        validate.check_spec(spec)
    except rules.Violation as exc:
        raise HeaderError(f"{header}: {exc.path}: {exc.message}") from None
    validate.mark_valid(spec)
    return spec


def add_exported(spec: Spec, base: Path, opts: ParseOptions, target: Target) -> Spec:
    """`spec` with the functions a library of its release exports beyond its header (the target's exported.yaml),
    each marked `undeclared`: built from a translation unit of their declarations after `base` (the header itself,
    or any header declaring the same types, such as one synthesised from the spec), appended in the file's order."""
    wanted = target.exported(spec.version)
    if not wanted:
        return spec
    import tempfile

    function_kind = cindex().CursorKind.FUNCTION_DECL.value
    body = "\n".join(f.declaration.strip() for f in wanted)
    text = f'#ifdef __cplusplus\nextern "C" {{\n#endif\n{body}\n#ifdef __cplusplus\n}}\n#endif\n'
    with tempfile.TemporaryDirectory(prefix="miogen-exported-") as tmp:
        decls = Path(tmp) / EXPORTED_FILE.replace(".yaml", ".h")
        decls.write_text(text, encoding="utf-8")
        try:
            tu = translation_unit(decls, [*clang_args(opts, target, opts.beta), "-include", str(base)], target)
        except HeaderError as exc:  # an entry that does not compile after the header (e.g. conflicting types)
            raise HeaderError(f"{target.path.parent / EXPORTED_FILE}: the declarations for {spec.version} do not "
                              f"compile after {base.name}; fix the entry (or its since/until): {exc}") from None
        b = Builder(decls, text, target)
        b.api_files |= {str(base), *(str(base.parent / n) for n in target.api_headers)}
        b.collect_names(top_level(tu, base, target.api_headers))
        added = [replace(b.valid(c, b.function(c)), undeclared=True) for c in top_level(tu, decls)
                 if c._kind_id == function_kind]
    where = target.path.parent / EXPORTED_FILE
    names = [f.name for f in added]
    if len(added) != len(wanted) or len(set(names)) != len(names):
        raise HeaderError(f"{where}: each entry's declaration must declare exactly one function, once "
                          f"({len(wanted)} entries for {spec.version} declare {', '.join(names) or 'none'})")
    # a header that declares one itself (a later release may) is followed; its prototype must be the entry's
    declared = {f.name: f for f in spec.functions}
    differ = sorted(f.name for f in added if f.name in declared and
                    ([p.type for p in f.params], f.returns) != ([p.type for p in declared[f.name].params],
                                                                declared[f.name].returns))
    if differ:
        raise HeaderError(f"{where}: {', '.join(differ)}: {spec.header.name} {spec.version} declares it with other "
                          f"types than the entry; fix the entry's declaration, or give it `until: {spec.version}`")
    return replace(spec, functions=(*spec.functions, *(f for f in added if f.name not in declared)))
