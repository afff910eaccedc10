"""The Jinja environment of the generated sources: the templates directory, the escaping filters and the
compiled templates' bytecode cache (kept in the per-user cache, codegen/base/cache.py)."""

from __future__ import annotations

from pathlib import Path
from types import CodeType
from typing import Any

import jinja2
import jinja2.bccache

from ..base import cache, escape


TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
#: how the generated sources' templates are compiled (part of every compiled template's cache key)
OPTIONS: dict[str, Any] = {"keep_trailing_newline": True, "trim_blocks": True, "lstrip_blocks": True,
                           "autoescape": False}
#: the Environment's settings that change what a template compiles to
_COMPILE_SETTINGS = ("block_start_string", "block_end_string", "variable_start_string", "variable_end_string",
                     "comment_start_string", "comment_end_string", "line_statement_prefix", "line_comment_prefix",
                     "trim_blocks", "lstrip_blocks", "newline_sequence", "keep_trailing_newline", "optimized",
                     "autoescape", "is_async", "finalize")


class _BytecodeCache(jinja2.BytecodeCache):
    """Compiled templates in the per-user cache, each an entry (`cache.read_entry`) keyed by Jinja's version, the
    environment's compile settings and extensions, the template's name, file and source checksum, and the
    generator's fingerprint: a damaged or foreign entry is a miss, compiled and written again."""

    def __init__(self, folder: Path, settings: str) -> None:
        self.folder, self.settings = folder, settings

    def _key(self, bucket: jinja2.bccache.Bucket) -> str:
        return f"template\0{jinja2.__version__}\0{self.settings}\0{bucket.key}\0{bucket.checksum}"

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        data = cache.read_entry(self.folder, self._key(bucket))
        if data is None:
            return
        try:
            bucket.bytecode_from_string(data)
        except Exception:  # noqa: BLE001 - what this generator wrote for this key, yet unreadable: compiled again
            bucket.reset()
        if not isinstance(bucket.code, CodeType):
            bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        cache.write_entry(self.folder, self._key(bucket), bucket.bytecode_to_string())


def settings(env: jinja2.Environment) -> str:
    """What of `env` changes a compiled template: its compile settings and extensions."""
    values = {name: getattr(env, name, None) for name in _COMPILE_SETTINGS}
    return repr((sorted(values.items()), sorted(env.extensions)))


def _bytecode_cache(env: jinja2.Environment | None = None) -> jinja2.BytecodeCache | None:
    """Compiled templates kept between runs in the per-user cache (`cache.private_cache`) for `env`'s settings;
    None where the cache is off or not trusted."""
    path = cache.private_cache(f"templates-{jinja2.__version__}")
    if path is None:
        return None
    return _BytecodeCache(path, settings(env if env is not None else jinja2.Environment(**OPTIONS)))


def environment() -> jinja2.Environment:
    """The environment rendering codegen/templates (strict: an undefined name is an error)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), undefined=jinja2.StrictUndefined,
                             **OPTIONS)
    env.bytecode_cache = _bytecode_cache(env)  # before any template is loaded
    escape.install(env)  # py_str, docstring_text, comment_block, ...: every string from a spec or target
    return env


def cpp_environment() -> jinja2.Environment:
    """The environment rendering the C++ sources of abi-check and the stub library (probe, stub, header)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    escape.install(env)  # c_include, c_str_text, comment_block for the C++ templates
    return env
