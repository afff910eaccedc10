"""What the next upstream release needs: a miopen.h without the OpenCL branch (MIOpen's develop removed the OpenCL
backend), and functions the library exports that its header does not declare (specs/<target>/exported.yaml).

The real headers of committed releases in ../shared are the inputs: each is parsed as it is, and with the
`#if MIOPEN_BACKEND_OPENCL` branches cut out in both ways upstream could write it (the HIP lines kept under
`#if MIOPEN_BACKEND_HIP`, or unconditional)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from miogen.base.record import replace
from miogen.base.errors import HeaderError
from miogen.parse.headers import ParseOptions
from miogen.parse.parser import add_exported, parse_header
from miogen.prove.stublib import header_source
from miogen.spec.target import DEFAULT_TARGET, load_target

from ...real_miopen import HIPNOGPU, OPENCL

#: real headers of committed releases (the HIPNOGPU and OpenCL builds' include folders)
HEADERS = [lib.shared / "include" / "miopen" / "miopen.h" for lib in (HIPNOGPU, OPENCL)]
_OCL_BRANCH = re.compile(r"#if MIOPEN_BACKEND_OPENCL\n.*?#elif MIOPEN_BACKEND_HIP\n(.*?)#endif\n", re.S)
_RANGE = ("miopenStatus_t miopenConvolution{d}GetWorkSpaceSizeRange(miopenHandle_t handle, "
          "const miopenTensorDescriptor_t aDesc, const miopenTensorDescriptor_t bDesc, "
          "const miopenConvolutionDescriptor_t convDesc, const miopenTensorDescriptor_t cDesc, "
          "size_t* minWorkspaceSize, size_t* maxWorkspaceSize);")


def _header(path: Path) -> Path:
    if not path.is_file():
        if HIPNOGPU.required or OPENCL.required:
            pytest.fail(f"{path} is missing")
        pytest.skip(f"no real header at {path}")
    return path


def _without_opencl(src: Path, dest: Path, keep_if: bool) -> Path:
    """A copy of the header (and its version.h) with every OpenCL branch cut out."""
    text = src.read_text(encoding="utf-8")
    cut = _OCL_BRANCH.sub((lambda m: f"#if MIOPEN_BACKEND_HIP\n{m.group(1)}#endif\n") if keep_if
                          else (lambda m: m.group(1)), text)
    assert cut != text and "MIOPEN_BACKEND_OPENCL" not in cut and "CL/cl.h" not in cut
    (dest / "miopen").mkdir(parents=True)
    (dest / "miopen" / "miopen.h").write_text(cut, encoding="utf-8")
    shutil.copy(src.parent / "version.h", dest / "miopen" / "version.h")
    return dest / "miopen" / "miopen.h"


@pytest.mark.parametrize("keep_if", [True, False], ids=["under-if-HIP", "unconditional"])
@pytest.mark.parametrize("header", HEADERS, ids=["hipnogpu", "opencl"])
def test_a_header_without_the_opencl_branch_parses_to_the_same_api(header: Path, keep_if: bool,
                                                                   tmp_path: Path) -> None:
    header = _header(header)
    target = load_target()
    before = parse_header(header, target, ParseOptions(beta=True))
    after = parse_header(_without_opencl(header, tmp_path, keep_if), target, ParseOptions(beta=True))
    assert after.header.sha256 != before.header.sha256
    assert replace(after, header=before.header) == before


def _target_with(tmp_path: Path, exported: str) -> Path:
    """A copy of the miopen target (target.yaml, annotations, shims) with `exported` as its exported.yaml."""
    root = tmp_path / "target"
    shutil.copytree(DEFAULT_TARGET.parent, root, ignore=shutil.ignore_patterns("*.*.*.yaml", "exported.yaml"))
    (root / "exported.yaml").write_text(exported, encoding="utf-8")
    return root / "target.yaml"


def _entries(since: str, until: str | None = None) -> str:
    lines = ["functions:"]
    for d in ("Forward", "BackwardData", "BackwardWeights"):
        lines += [f"  - since: {since}", *([f"    until: {until}"] if until else []),
                  f"    declaration: '{_RANGE.format(d=d)}'"]
    return "\n".join(lines) + "\n"


def test_exported_functions_join_the_spec_of_their_releases(tmp_path: Path) -> None:
    header = _header(HEADERS[0])
    plain = parse_header(header, load_target(), ParseOptions(beta=True))
    version = str(plain.version)
    with_them = parse_header(header, load_target(_target_with(tmp_path / "a", _entries(version))), ParseOptions(beta=True))
    added = with_them.functions[len(plain.functions):]
    assert with_them.functions[: len(plain.functions)] == plain.functions
    assert [f.name for f in added] == [f"miopenConvolution{d}GetWorkSpaceSizeRange"
                                       for d in ("Forward", "BackwardData", "BackwardWeights")]
    assert all(f.undeclared and not f.beta for f in added)
    assert [p.type.kind for p in added[0].params] == ["handle"] * 5 + ["int", "int"]
    assert [p.role.direction for p in added[0].params[5:] if p.role] == ["out", "out"]
    # outside [since, until) the file adds nothing
    for i, entries in enumerate((_entries("99.0.0"), _entries("1.0.0", until=version))):
        assert parse_header(header, load_target(_target_with(tmp_path / f"out{i}", entries)),
                            ParseOptions(beta=True)).functions == plain.functions
    # the same functions from a header synthesised from the spec (how a committed spec gains them without its
    # header): exactly what the real header gives
    synthesised = tmp_path / "spec.h"
    synthesised.write_text(header_source(plain, "// synthesised"), encoding="utf-8")
    target = load_target(_target_with(tmp_path / "b", _entries(version)))
    assert add_exported(plain, synthesised, ParseOptions(beta=True), target) == with_them


@pytest.mark.parametrize("bad, message", [
    ("functions:\n  - since: 1.0.0\n    declaration: 'int x;'\n", "must declare exactly one function"),
    ("functions:\n  - since: 1.0.0\n    declaration: 'miopenStatus_t miopenDestroy(miopenHandle_t handle, int n);'\n",
     "do not compile after miopen.h"),
    ("functions:\n  - since: 1.0.0\n    declaration: 'miopenStatus_t miopenNoSuch(miopenNoSuchType_t x);'\n",
     "do not compile after miopen.h"),
])
def test_a_wrong_entry_is_named(tmp_path: Path, bad: str, message: str) -> None:
    header = _header(HEADERS[0])
    with pytest.raises(HeaderError, match=message) as info:
        parse_header(header, load_target(_target_with(tmp_path, bad)), ParseOptions(beta=True))
    assert "exported.yaml" in str(info.value)


def test_a_header_that_declares_one_itself_is_followed(tmp_path: Path) -> None:
    """A later header may declare an entry's function itself: its own declaration is used (same prototype)."""
    header = _header(HEADERS[0])
    plain = parse_header(header, load_target(), ParseOptions(beta=True))
    entry = "functions:\n  - since: 1.0.0\n    declaration: 'miopenStatus_t miopenDestroy(miopenHandle_t handle);'\n"
    assert parse_header(header, load_target(_target_with(tmp_path, entry)), ParseOptions(beta=True)) == plain


def test_exported_functions_are_abi_checked_like_the_rest(tmp_path: Path) -> None:
    header = _header(HEADERS[0])
    plain = parse_header(header, load_target(), ParseOptions(beta=True))
    target = _target_with(tmp_path, _entries(str(plain.version)))
    r = subprocess.run([sys.executable, "-m", "miogen", "abi-check", str(header), "--target", str(target),
                        "--annotations", str(target.parent / "annotations.yaml")],
                       capture_output=True, text=True, timeout=600, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"call-through {len(plain.functions) + 3} functions, 0 failing" in r.stdout, r.stdout
