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


def shown(path: object) -> str:
    """A path (str, bytes or PathLike) as a message shows it: bytes that are not UTF-8 (a str holds them as lone
    surrogates, os.fsdecode's) as backslash escapes, so printing it never fails."""
    import os

    text = os.fsdecode(path) if isinstance(path, bytes) else str(path)
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
