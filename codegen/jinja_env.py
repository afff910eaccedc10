"""The Jinja environment of the generated sources: the templates directory, the escaping filters and the
compiled templates' bytecode cache (kept in the per-user cache, codegen/cache.py)."""

from __future__ import annotations

from pathlib import Path

import jinja2

from . import escape
from .cache import private_cache


TEMPLATES = Path(__file__).resolve().parent / "templates"


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates kept between runs (Jinja keys them by template path and source checksum) in the
    per-user cache (`private_cache`)."""
    path = private_cache(f"templates-{jinja2.__version__}")
    return None if path is None else jinja2.FileSystemBytecodeCache(str(path))


def environment() -> jinja2.Environment:
    """The environment rendering codegen/templates (strict: an undefined name is an error)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        bytecode_cache=_bytecode_cache(),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    escape.install(env)  # py_str, docstring_text, comment_block, ...: every string from a spec or target
    return env


def cpp_environment() -> jinja2.Environment:
    """The environment rendering the C++ sources of abi-check and the stub library (probe, stub, header)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    escape.install(env)  # c_include, c_str_text, comment_block for the C++ templates
    return env
