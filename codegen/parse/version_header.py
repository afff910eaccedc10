"""The release a header declares: the target's version header installed beside it."""

from __future__ import annotations

import re
from pathlib import Path

from ..base.errors import HeaderError
from ..spec.releases import Version
from ..spec.target import Target


def read_version_header(header: Path, target: Target) -> tuple[Path | None, Version | None, str | None]:
    """The target's version header installed beside `header`: (its path or None, the version it declares
    or None, why it declares none or None)."""
    if not target.version_header or len(target.version_macros) != 3:
        return None, None, None
    vh = header.parent / target.version_header
    if not vh.is_file():
        return None, None, None
    text = vh.read_text(encoding="utf-8", errors="replace")
    values = []
    for macro in target.version_macros:
        m = re.search(rf"#[ \t]*define[ \t]+{re.escape(macro)}[ \t]+(\S+)", text, re.ASCII)
        if m is None:
            return vh, None, f"it does not define {macro}"
        value = m.group(1)
        if value.startswith("@") or value.startswith("${"):
            return vh, None, (f"{macro} is {value}, a value CMake never filled in (this is the version.h template of "
                              f"a source tree, not the configured one of an install or build)")
        if not value.isdigit() or len(value) > 6:
            return vh, None, f"{macro} is {value[:20]!r}, not a version number"
        values.append(value)
    return vh, Version.parse(".".join(values)), None


def detect_version(header: Path, target: Target) -> Version | None:
    """The version from the target's version header installed beside the header, if it declares one."""
    return read_version_header(header, target)[1]


def header_version(header: Path, target: Target) -> Version:
    """The version the header's version.h declares, or a HeaderError saying why there is none."""
    vh, version, problem = read_version_header(header, target)
    if version is not None:
        return version
    if vh is None:
        raise HeaderError(
            f"{header}: cannot tell the {target.display_name} version (no {target.version_header or 'version header'}"
            f" beside the header); pass --miopen-version X.Y.Z"
        )
    raise HeaderError(f"{vh}: cannot tell the {target.display_name} version: {problem}; pass --miopen-version X.Y.Z")
