"""Target facts (names, prefixes, status type, shims) read from specs/<target>/target.yaml."""

from __future__ import annotations

import builtins
from pathlib import Path

from ..base.record import record
from . import rules, validate
from ..base.errors import CodegenError, SpecError
from .model import Spec
from .releases import Version
from .spec_io import load_as

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
# The target files (target.yaml, annotations.yaml, shims/): specs/<target>/ in a checkout (their source of
# truth); an installed miogen carries copies as package data in miogen/targets/<target>/.
_PACKAGED = Path(__file__).resolve().parent.parent / "targets"
TARGETS_DIR = _PACKAGED if _PACKAGED.is_dir() else REPO_ROOT / "specs"
DEFAULT_TARGET = TARGETS_DIR / "miopen" / "target.yaml"
# The committed specs and the pin file: only a checkout has them.
SPECS_DIR: Path | None = REPO_ROOT / "specs" / "miopen" if (REPO_ROOT / "specs" / "miopen" / "pinned").is_file() else None


@record
class DiagnosticHint:
    """A hint shown under a libclang diagnostic whose message contains `match`."""

    match: str
    hint: str


@record
class StatusException:
    """The exception class a status raises in the generated errors module (`also`: its second base)."""

    name: str
    also: str | None = None
    since: Version | None = None  # the first release with this status (older specs lack the constant)


@record
class ExportedFunction:
    """A function the library exports that its header does not declare: its C declaration (our own spelling of
    the prototype), the first release exporting it and the first one without it (none: still exported)."""

    declaration: str
    since: Version
    until: Version | None = None
    source: str = ""


@record
class ExportedFunctions:
    """specs/<target>/exported.yaml."""

    functions: tuple[ExportedFunction, ...] = ()


#: the file beside target.yaml declaring what the library exports beyond its header
EXPORTED_FILE = "exported.yaml"


@record
class Target:
    """The facts of one target library (specs/<target>/target.yaml)."""

    name: str
    display_name: str
    header: str
    function_prefix: str
    status_type: str
    success_constant: str
    beta_macro: str
    default_defines: tuple[str, ...]
    library_names: tuple[str, ...]
    library_env: str
    library_root_env: str | None
    library_roots: tuple[str, ...]
    find_library_name: str
    error_suffix: str
    host_scalar_names: tuple[str, ...]
    diagnostic_hints: tuple[DiagnosticHint, ...]
    error_base: str
    status_exceptions: dict[str, StatusException]
    status_warnings: tuple[str, ...]
    status_hints: dict[str, str]
    # headers beside the main one whose declarations belong to the API (e.g. cudnn.h's parts)
    api_headers: tuple[str, ...] = ()
    # the version header installed beside the main header, and its three macros
    version_header: str | None = None
    version_macros: tuple[str, ...] = ()
    # a function `status f(size_t *major, size_t *minor, size_t *patch)` giving the loaded library's version
    version_getter: str | None = None
    # an environment switch that turns the version check off (the loaded release is still selected)
    skip_version_check_env: str | None = None
    # the system headers the main header includes before its own declarations, as it names them
    # (`<name>`): parsed once into a precompiled preamble (codegen/parse/preamble.py)
    preamble: tuple[str, ...] = ()
    # environment variables naming install prefixes (a list, os.pathsep-separated: conda's $CONDA_PREFIX, spack's
    # $CMAKE_PREFIX_PATH) whose lib/ and lib64/ are searched after $library_root_env
    library_prefix_envs: tuple[str, ...] = ()
    # folders of Python wheels that carry the library, relative to each site-packages folder, `*` matching any
    # name part (TheRock's rocm-sdk wheels: `_rocm_sdk_libraries_<family>/lib`), searched after the prefixes and before
    # library_roots
    library_wheel_dirs: tuple[str, ...] = ()
    # the words after the function prefix that name a function setting what its first argument (a handle)
    # describes (`<prefix>Set...`: the wrapper refuses a shared descriptor there)
    setter_verbs: tuple[str, ...] = ()
    path: Path = Path()
    #: what the library exports beyond its header: exported.yaml beside target.yaml (read by load_target)
    exported_functions: tuple[ExportedFunction, ...] = ()

    def exported(self, version: Version) -> tuple[ExportedFunction, ...]:
        """What a library of `version` exports beyond its header (`exported_functions`)."""
        return tuple(f for f in self.exported_functions
                     if f.since <= version and (f.until is None or version < f.until))

    @property
    def shim_dir(self) -> Path:
        """The target's minimal stand-ins for headers its header includes."""
        return self.path.parent / "shims"


def target_path(name: str) -> Path:
    """The target file of the target `name` (specs/<name>/target.yaml, or its installed copy)."""
    return TARGETS_DIR / name / "target.yaml"


def target_for(name: str) -> Target:
    """The target facts of the target `name`."""
    return load_target(target_path(name))


def load_target(path: Path = DEFAULT_TARGET) -> Target:
    target = load_as(Target, path, skip=("path", "exported_functions"))
    problems = target_problems(target)
    if problems:
        raise SpecError(f"{path}: " + "; ".join(problems))
    exported = path.parent / EXPORTED_FILE
    functions = load_as(ExportedFunctions, exported).functions if exported.is_file() else ()
    return Target(**{**target.__dict__, "path": path, "exported_functions": functions})


def target_problems(target: Target) -> list[str]:
    """Exception class names the generated errors module would define twice or over its own names."""
    from . import reserved

    base = target.error_base
    warning = (base[:-5] if base.endswith("Error") else base) + "Warning"
    seen: dict[str, str] = {}
    problems = []
    for where, name in [("error_base", base), ("error_base (its warning class)", warning),
                        *((f"status_exceptions.{k}.name", v.name) for k, v in target.status_exceptions.items())]:
        if name in reserved.ERRORS_MODULE or name in reserved.API_MODULE or name in reserved.PACKAGE:
            problems.append(f"{where}: {name} is a name the generated package uses itself")
        elif name in seen:
            problems.append(f"{where}: {name} is also {seen[name]}")
        seen[name] = where
    return problems


def check_target(spec: Spec, target: Target) -> None:
    """The target file must describe this spec's library: names it uses must exist in the spec."""
    where = f"{target.path}"
    try:  # a target built in memory gets the checks a loaded one had (its strings reach generated code)
        validate.ensure_valid(target)
    except rules.Violation as bad:
        raise CodegenError(f"{where}: {bad.path}: {bad.message}") from None
    problems = target_problems(target)
    if problems:
        raise CodegenError(f"{where}: " + "; ".join(problems))
    if spec.target != target.name:
        raise CodegenError(f"{where}: the spec is for {spec.target!r} but this target file is {target.name!r}; pass "
                           f"--target specs/{spec.target}/target.yaml")
    status = next((e for e in spec.enums if e.name == target.status_type), None)
    if status is None:
        raise CodegenError(f"{where}: status_type: {target.status_type} is no enum of the spec")
    values = {c.name: c.value for c in status.constants}
    if values.get(target.success_constant) != 0:
        raise CodegenError(f"{where}: success_constant: {target.success_constant} must be a {target.status_type} "
                           f"constant of value 0 (the generated status checks test for non-zero)")
    def newer(key: str) -> bool:
        since = target.status_exceptions[key].since if key in target.status_exceptions else None
        return since is not None and since > spec.version

    for key in (*target.status_exceptions, *target.status_warnings, *target.status_hints):
        if key not in values and not newer(key):
            raise CodegenError(f"{where}: {key} (status_exceptions/status_warnings/status_hints) is no "
                               f"{target.status_type} constant; known: {', '.join(values)}")
    for key, exc in target.status_exceptions.items():
        base = getattr(builtins, exc.also, None) if exc.also else None
        if exc.also and not (isinstance(base, type) and issubclass(base, BaseException)):
            raise CodegenError(f"{where}: status_exceptions.{key}.also: {exc.also} is no built-in exception")
        if not exc.name.isidentifier():
            raise CodegenError(f"{where}: status_exceptions.{key}.name: {exc.name!r} is no Python class name")
