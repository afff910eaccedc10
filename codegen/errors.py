"""Errors the generator reports to users (the CLI prints them without a traceback)."""

from __future__ import annotations


class CodegenError(Exception):
    """Base class: a message fit to show as is."""


class HeaderError(CodegenError):
    """The header could not be parsed into a trustworthy spec."""


class SetupError(CodegenError):
    """The environment is missing something the parser needs (libclang, builtin headers)."""


class SpecError(CodegenError):
    """A spec or target file is malformed; `path` is the YAML path of the bad key."""

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class NamingError(SpecError):
    """Python names made from a spec collide, or hit a name the generated code uses itself."""
