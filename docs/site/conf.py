"""Sphinx configuration of the documentation site (`make docs`; the sources are staged by docs/site/build.py)."""

from __future__ import annotations

import re
from typing import Any

project = "miogen"
author = "the miogen authors"
copyright = "the miogen authors"

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns: list[str] = []

# the Markdown pages link to each other's headings (`internals.md#the-tests`): GitHub's anchors
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]
suppress_warnings = ["myst.xref_missing"]

# the reference: signatures with their types, docstrings as written (Google style: Args, Returns)
autodoc_typehints = "signature"
autodoc_member_order = "bysource"
autodoc_preserve_defaults = True
napoleon_google_docstring = True
napoleon_numpy_docstring = False
add_module_names = False

# the docstrings are plain text (the generated ones quote the header's words): `x` is code, and a lone `*` or `|`
# (`2*pad`, `|x|`) is a character, not the start of emphasis or a substitution
default_role = "code"
_LONE = re.compile(r"(?<![*\\])\*(?!\*)|(?<!\\)\|")


def _plain_characters(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    lines[:] = [_LONE.sub(lambda m: "\\" + m.group(0), line) for line in lines]


def setup(app: Any) -> None:
    app.connect("autodoc-process-docstring", _plain_characters, priority=400)


html_theme = "furo"
html_title = "miogen: MIOpen for Python"
html_copy_source = False
html_show_sourcelink = False
