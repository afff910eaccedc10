"""`import miopen` stays cheap: it loads no standard module that only type checking or later calls need."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

#: loaded by `typing` (and `re` by nothing else of ours at import): 7-8 ms of a 25 ms budget on a 2-core machine
DEFERRED = ("typing", "re", "contextlib", "dataclasses", "inspect", "textwrap", "importlib.metadata")


def _modules_after(code: str) -> set[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    # the probe itself imports nothing beyond sys (json would load re)
    out = subprocess.run([sys.executable, "-c", f"{code}\nimport sys\nprint(' '.join(sys.modules))"],
                         env=env, check=True, capture_output=True, text=True).stdout
    return set(out.splitlines()[-1].split())


@pytest.fixture(scope="module")
def after_import() -> set[str]:
    return _modules_after("import miopen")


@pytest.mark.parametrize("module", DEFERRED)
def test_import_miopen_loads_no_deferred_module(after_import: set[str], module: str) -> None:
    bare = _modules_after("")
    if module in bare:
        pytest.fail(f"{module} is loaded by a bare interpreter here: this test cannot tell")
    assert module not in after_import


def test_every_support_module_loads_at_import_without_typing(after_import: set[str]) -> None:
    """The class: every generated support module (and the package facades) is on the import path yet none pulls
    in typing; names used only in annotations come from `if TYPE_CHECKING:` blocks."""
    ours = {m for m in after_import if m.startswith("miopen")}
    assert {"miopen._generated._support", "miopen._generated._convert", "miopen._generated.api",
            "miopen._generated.raw", "miopen._generated.errors"} <= ours
    assert "typing" not in after_import


def test_lazy_names_still_resolve_after_a_cheap_import() -> None:
    """What the import no longer loads is loaded on first use: the typed layer and a runtime submodule work."""
    mods = _modules_after("import miopen\nfrom miopen.ops import activation\n"
                          "assert callable(activation.activation_forward)\n"
                          "assert miopen.errors.MIOpenError is miopen.MIOpenError")
    assert {"miopen.ops.activation", "miopen.errors"} <= mods


#: what a parse of a header does without: shutil (with bz2, lzma and zlib), tempfile (with random), threading,
#: fcntl, OpenSSL's hashes (`_hashlib`: miogen.base.digest uses CPython's own SHA-256), pickle's pure-Python module
#: (miogen.base.cache uses its C pickler), and dataclasses with the inspect it imports (and inspect's ast, dis,
#: tokenize: codegen/base/record.py makes the generator's classes)
NOT_FOR_A_PARSE = ("shutil", "bz2", "lzma", "zlib", "tempfile", "random", "threading", "fcntl", "_hashlib", "pickle",
                   "dataclasses", "inspect", "ast", "dis", "tokenize")


def test_a_parse_loads_none_of_what_it_does_without(tmp_path: Path) -> None:
    """The `miogen parse` command, its per-user cache filled by an earlier run (a miss writes an entry with
    tempfile), loads none of NOT_FOR_A_PARSE (a bare interpreter here loads none of them either, else this test
    could not tell), and makes no `typing.ForwardRef`: an annotation kept as a string (a NamedTuple's, or a class's
    that `typing.get_type_hints` reads, in a module with `from __future__ import annotations`) is compiled, and the
    first `compile()` of a process sets up the compiler's syntax-tree types, about 9 million instructions."""
    from ..helpers import FIXTURE_HEADER

    # the command ends its process with `os._exit` (no teardown): here it raises SystemExit, so the probe can print
    code = ("import os, runpy, sys, typing\nsys.argv = ['miogen', 'parse', sys.argv[1], '--beta', '-o', sys.argv[2]]\n"
            "def ended(status):\n    raise SystemExit(status)\nos._exit = ended\n"
            "made = []\ninit = typing.ForwardRef.__init__\n"
            "def counted(self, arg, *a, **k):\n    made.append(arg)\n    init(self, arg, *a, **k)\n"
            "typing.ForwardRef.__init__ = counted\n"
            "try:\n    runpy.run_module('miogen', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "print('forward references:', made)\nprint(' '.join(sys.modules))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["MIOGEN_CACHE_DIR"] = str(tmp_path)
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", code, str(FIXTURE_HEADER), str(tmp_path) + "/"], env=env,
                             check=True, capture_output=True, text=True).stdout
    assert out.splitlines()[-2] == "forward references: []"
    loaded = set(out.splitlines()[-1].split())
    assert "miogen.parse.parser" in loaded and "miogen.spec.yamlwrite" in loaded
    assert not set(NOT_FOR_A_PARSE) & _modules_after("")
    assert not set(NOT_FOR_A_PARSE) & loaded
