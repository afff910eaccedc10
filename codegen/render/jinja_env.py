"""The Jinja environment of the generated sources: the templates directory, the escaping filters, the compiled
templates' bytecode cache (kept in the per-user cache, codegen/base/cache.py) and the compiled templates the
package ships (`compile_shipped`, run when the package is built)."""

from __future__ import annotations

import functools
from pathlib import Path
from types import CodeType
from typing import Any

import jinja2
import jinja2.bccache

from ..base import cache, escape
from ..base.digest import sha256


TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
#: where the compiled templates sit in the package, under its root (an installed one, or the link tree of the
#: editable install: not resolved, as the templates are)
SHIPPED_IN_PACKAGE = ("templates", "__compiled__")
#: the compiled templates this package ships (none in a checkout not installed): `compile_shipped` writes them
SHIPPED = Path(__file__).parent.parent.joinpath(*SHIPPED_IN_PACKAGE)
#: how the generated sources' templates are compiled (part of every compiled template's cache key)
OPTIONS: dict[str, Any] = {"keep_trailing_newline": True, "trim_blocks": True, "lstrip_blocks": True,
                           "autoescape": False}
#: the Environment's settings that change what a template compiles to
_COMPILE_SETTINGS = ("block_start_string", "block_end_string", "variable_start_string", "variable_end_string",
                     "comment_start_string", "comment_end_string", "line_statement_prefix", "line_comment_prefix",
                     "trim_blocks", "lstrip_blocks", "newline_sequence", "keep_trailing_newline", "optimized",
                     "autoescape", "is_async", "finalize")


def _fill(bucket: jinja2.bccache.Bucket, data: bytes) -> None:
    """`bucket`'s code from `data` (Jinja's bytecode: checked against the running Python and the template source's
    checksum); left empty where it does not fit or cannot be read, and the template is compiled."""
    try:
        bucket.bytecode_from_string(data)
    except Exception:  # noqa: BLE001 - bytes this generator wrote for this key, yet unreadable: compiled again
        bucket.reset()
    if not isinstance(bucket.code, CodeType):
        bucket.reset()


class _BytecodeCache(jinja2.BytecodeCache):
    """Compiled templates in the per-user cache, each an entry (`cache.read_entry`) keyed by Jinja's version, the
    environment's compile settings and extensions, the template's name, file and source checksum, and the
    generator's fingerprint: a damaged or foreign entry is a miss, compiled and written again. A template not
    there comes from the package's shipped ones (`SHIPPED`) where one of its name, settings and source is."""

    def __init__(self, folder: Path | None, settings: str) -> None:
        self.folder, self.settings = folder, settings

    def _key(self, bucket: jinja2.bccache.Bucket) -> str:
        return f"template\0{jinja2.__version__}\0{self.settings}\0{bucket.key}\0{bucket.checksum}"

    def get_bucket(self, environment: jinja2.Environment, name: str, filename: str | None,
                   source: str) -> jinja2.bccache.Bucket:
        bucket = super().get_bucket(environment, name, filename, source)
        if bucket.code is None:
            try:
                data = (SHIPPED / shipped_name(name, self.settings)).read_bytes()
            except OSError:  # none shipped for it: compiled (and written to the per-user cache)
                return bucket
            _fill(bucket, data)
        return bucket

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        data = cache.read_entry(self.folder, self._key(bucket)) if self.folder is not None else None
        if data is not None:
            _fill(bucket, data)

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        if self.folder is not None:
            cache.write_entry(self.folder, self._key(bucket), bucket.bytecode_to_string())


def settings(env: jinja2.Environment) -> str:
    """What of `env` changes a compiled template: its compile settings and extensions."""
    values = {name: getattr(env, name, None) for name in _COMPILE_SETTINGS}
    return repr((sorted(values.items()), sorted(env.extensions)))


@functools.cache
def _definition() -> str:
    """The SHA-256 of what defines the environment beyond its settings: this module and the filters' (a filter
    applied to a constant is computed when the template is compiled)."""
    return sha256(Path(__file__).read_bytes() + b"\0" + Path(escape.__file__).read_bytes()).hexdigest()


def shipped_name(name: str, settings_text: str) -> str:
    """The file in `SHIPPED` of the template `name` compiled with `settings_text`: keyed by Jinja's version, those
    settings and the environment's definition (`_definition`); the running Python and the template's source are
    checked in the file itself (Jinja's bytecode header and checksum)."""
    key = f"shipped\0{jinja2.__version__}\0{settings_text}\0{_definition()}\0{name}"
    return sha256(key.encode("utf-8", "surrogateescape")).hexdigest()


def _bytecode_cache(env: jinja2.Environment | None = None) -> _BytecodeCache:
    """Compiled templates for `env`'s settings: those kept between runs in the per-user cache
    (`cache.private_cache`; its folder None where the cache is off or not trusted), then the shipped ones."""
    folder = cache.private_cache(f"templates-{jinja2.__version__}")
    return _BytecodeCache(folder, settings(env if env is not None else jinja2.Environment(**OPTIONS)))


def _plain() -> jinja2.Environment:
    """The environment of the generated sources without a bytecode cache (strict: an undefined name is an error)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), undefined=jinja2.StrictUndefined,
                             **OPTIONS)
    escape.install(env)  # py_str, docstring_text, comment_block, ...: every string from a spec or target
    return env


def environment() -> jinja2.Environment:
    """The environment rendering codegen/templates, its compiled templates from the per-user cache or the
    package (`_bytecode_cache`)."""
    env = _plain()
    env.bytecode_cache = _bytecode_cache(env)  # before any template is loaded
    return env


def compile_shipped(package: Path) -> list[Path]:
    """Compile every template into `package`'s `SHIPPED_IN_PACKAGE` folder (setup.py's build step, in the built
    package or the editable install's link tree, as pip compiles .pyc files) and return the files. The same
    sources give the same bytes wherever they are built (the code's file name is the template's name)."""
    env = _plain()
    text = settings(env)
    folder = package.joinpath(*SHIPPED_IN_PACKAGE)
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():  # an earlier build's
        old.unlink()
    written = []
    for name in env.list_templates(extensions=["j2"]):
        source = (TEMPLATES / name).read_text(encoding="utf-8")
        bucket = jinja2.bccache.Bucket(env, name, _BytecodeCache(None, text).get_source_checksum(source))
        bucket.code = env.compile(source, name, name)
        path = folder / shipped_name(name, text)
        path.write_bytes(bucket.bytecode_to_string())
        written.append(path)
    return written


def cpp_environment() -> jinja2.Environment:
    """The environment rendering the C++ sources of abi-check and the stub library (probe, stub, header)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    escape.install(env)  # c_include, c_str_text, comment_block for the C++ templates
    return env
