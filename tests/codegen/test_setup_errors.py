"""Each setup mistake (research §4) and each not-a-header input ends in a clear error, never a wrong spec."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miogen.parse import clang_env
from miogen.base.errors import HeaderError, SetupError
from miogen.parse.headers import ParseOptions
from miogen.parse.parser import parse_header
from miogen.spec.releases import Version

from ..helpers import FIXTURE_HEADER, fixture_spec, target


def _parse(header: Path = FIXTURE_HEADER, **kw: object) -> None:
    version = None if header == FIXTURE_HEADER else "1.0.0"  # the fixture has a version.h beside it
    parse_header(header, target(), ParseOptions(**kw), version=version)  # type: ignore[arg-type]


def _shim_tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp_path / "inc" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path / "inc"


GOOD_CONFIG = "#define MIOPEN_BACKEND_OPENCL 0\n#define MIOPEN_BACKEND_HIP 1\n"
GOOD_EXPORT = "#define MIOPEN_EXPORT\n"
GOOD_HIP = "#include <stdint.h>\ntypedef struct ihipStream_t* hipStream_t;\n"


def test_missing_builtin_headers() -> None:
    with pytest.raises(HeaderError) as e:
        _parse(builtin_include=None)
    msg = str(e.value)
    assert "'stddef.h' file not found" in msg
    assert "miopen.h:" in msg and "fix: the compiler builtin headers are not on the include path" in msg


def test_builtin_dir_from_env_must_hold_the_headers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clang_env.find_builtin_include.cache_clear()
    monkeypatch.setenv(clang_env.BUILTIN_ENV, str(tmp_path))
    try:
        with pytest.raises(SetupError, match=r"does not hold stddef.h, stdbool.h, stdint.h"):
            clang_env.find_builtin_include()
    finally:
        clang_env.find_builtin_include.cache_clear()


def test_no_compiler_to_ask(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clang_env.find_builtin_include.cache_clear()
    monkeypatch.delenv(clang_env.BUILTIN_ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    try:
        with pytest.raises(SetupError, match=r"cannot find the compiler builtin headers .*no clang, gcc or cc on PATH"):
            clang_env.find_builtin_include()
    finally:
        clang_env.find_builtin_include.cache_clear()


def test_the_compilers_answers_are_remembered_per_compiler(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """What the compilers answer is kept in the per-user cache: a later process finds the builtin folder without
    running them; another compiler under a name (or the same name changed) or another GCC_EXEC_PREFIX asks them
    again; which answer holds the headers is checked every time (headers installed in clang's folder since are
    taken, a folder that lost one is not)."""
    calls = tmp_path / "calls"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    folders = []
    for name in ("a", "b", "clang/include"):
        d = tmp_path / name
        d.mkdir(parents=True)
        folders.append(d)
    for d in folders[:2]:
        for h in ("stddef.h", "stdbool.h", "stdint.h"):
            (d / h).write_text("")

    def fake(name: str, answer: Path, padding: str = "") -> None:
        tool = bin_dir / name
        tool.write_text(f"#!/bin/sh\necho {name} >> {calls}\necho {answer}{padding}\n")
        tool.chmod(0o755)

    def asked() -> int:
        return len(calls.read_text().split()) if calls.exists() else 0

    def find() -> Path:
        clang_env.find_builtin_include.cache_clear()
        try:
            return clang_env.find_builtin_include()
        finally:
            clang_env.find_builtin_include.cache_clear()

    monkeypatch.delenv(clang_env.BUILTIN_ENV, raising=False)
    monkeypatch.delenv("GCC_EXEC_PREFIX", raising=False)
    monkeypatch.setenv("MIOGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(bin_dir))
    fake("gcc", folders[0])
    assert find() == folders[0] and asked() == 1
    assert find() == folders[0] and asked() == 1  # remembered: not asked again
    fake("gcc", folders[1], padding="/")  # another compiler under the name (another size)
    assert find() == folders[1] and asked() == 2
    monkeypatch.setenv("GCC_EXEC_PREFIX", str(tmp_path))  # another variable steering the driver
    assert find() == folders[1] and asked() == 3
    fake("clang", folders[2].parent)  # clang's resource folder has no headers yet: gcc's is taken
    assert find() == folders[1] and asked() == 5
    for h in ("stddef.h", "stdbool.h", "stdint.h"):
        (folders[2] / h).write_text("")
    assert find() == folders[2] and asked() == 5  # installed since: taken without asking again
    (folders[2] / "stdint.h").unlink()
    (folders[1] / "stdint.h").unlink()  # neither holds them any more: refused, naming what was tried
    with pytest.raises(SetupError, match=r"cannot find the compiler builtin headers .*tried clang: .*; gcc: "):
        find()
    assert asked() == 5
    monkeypatch.setenv("MIOGEN_CACHE_DIR", "")  # no cache: asked every time
    (folders[2] / "stdint.h").write_text("")
    assert find() == folders[2] and find() == folders[2] and asked() == 9


def test_builtin_dir_is_found_by_itself() -> None:
    clang_env.find_builtin_include.cache_clear()
    d = clang_env.find_builtin_include()
    assert (d / "stddef.h").is_file() and (d / "stdbool.h").is_file()


def test_hip_header_without_stdint(tmp_path: Path) -> None:
    inc = _shim_tree(tmp_path, {"hip/hip_runtime_api.h": "typedef struct ihipStream_t* hipStream_t;\n"})
    with pytest.raises(HeaderError) as e:
        _parse(includes=(inc,))
    msg = str(e.value)
    assert "unknown type name 'uint64_t'" in msg
    assert "the HIP header on the include path must include <stdint.h>" in msg


def test_half_defined_config_h(tmp_path: Path) -> None:
    inc = _shim_tree(tmp_path, {"miopen/config.h": "#define MIOPEN_BACKEND_OPENCL 0\n"})
    with pytest.raises(HeaderError) as e:
        _parse(includes=(inc,))
    msg = str(e.value)
    assert "unknown type name 'miopenAcceleratorQueue_t'" in msg
    assert "must define both MIOPEN_BACKEND_HIP (1) and MIOPEN_BACKEND_OPENCL (0)" in msg


def test_no_shims_at_all() -> None:
    with pytest.raises(HeaderError) as e:
        _parse(shims=False, includes=())
    msg = str(e.value)
    assert "'miopen/config.h' file not found" in msg
    assert "pass -I /opt/rocm/include" in msg


def test_empty_export_h(tmp_path: Path) -> None:
    inc = _shim_tree(tmp_path, {"miopen/export.h": ""})
    with pytest.raises(HeaderError) as e:
        _parse(includes=(inc,))
    msg = str(e.value)
    assert "MIOPEN_EXPORT" in msg and "export.h must define MIOPEN_EXPORT" in msg


def test_own_complete_shims_work_without_miogens(tmp_path: Path) -> None:
    inc = _shim_tree(
        tmp_path, {"miopen/config.h": GOOD_CONFIG, "miopen/export.h": GOOD_EXPORT, "hip/hip_runtime_api.h": GOOD_HIP}
    )
    spec = parse_header(FIXTURE_HEADER, target(), ParseOptions(beta=True, shims=False, includes=(inc,)))
    assert spec.functions == fixture_spec(True).functions


REAL_HIP = Path("/usr/include/hip/hip_runtime_api.h")


@pytest.mark.skipif(
    not REAL_HIP.exists() and not os.environ.get("MIOGEN_REQUIRE_REAL_HIP"),
    reason="needs Debian's libamdhip64-dev (.ci/run installs it and makes this test required)",
)
def test_real_hip_headers_give_the_same_spec(tmp_path: Path) -> None:
    """Debian's real HIP 5.2.3 headers (no HIP shim anywhere on the path) vs the shims alone."""
    assert REAL_HIP.exists(), "MIOGEN_REQUIRE_REAL_HIP is set but libamdhip64-dev is not installed"
    inc = _shim_tree(tmp_path, {"miopen/config.h": GOOD_CONFIG, "miopen/export.h": GOOD_EXPORT})  # no hip/
    real = parse_header(FIXTURE_HEADER, target(), ParseOptions(beta=True, shims=False, includes=(inc,)))
    shim = parse_header(FIXTURE_HEADER, target(), ParseOptions(beta=True, includes=(target().shim_dir,)))
    assert real == shim


def test_real_hip_without_platform_macro_is_explained(tmp_path: Path) -> None:
    inc = _shim_tree(tmp_path, {"hip/hip_runtime_api.h": '#error "Must define exactly one of __HIP_PLATFORM_AMD__ or __HIP_PLATFORM_NVIDIA__"\n'})
    with pytest.raises(HeaderError, match=r"keep the target's default -D __HIP_PLATFORM_AMD__"):
        _parse(includes=(inc,))


def test_c_mode_errors_point_to_cxx() -> None:
    with pytest.raises(HeaderError) as e:
        _parse(language="c", beta=True)
    msg = str(e.value)
    assert "parse it with --language c++" in msg


# ---------------------------------------------------------------- not a header


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(HeaderError, match=r"no such file"):
        _parse(tmp_path / "nope.h")


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(HeaderError, match=r"not a regular file"):
        _parse(tmp_path)


@pytest.mark.parametrize("content", [b"", b"  \n\n\t\n"])
def test_empty(tmp_path: Path, content: bytes) -> None:
    h = tmp_path / "miopen.h"
    h.write_bytes(content)
    with pytest.raises(HeaderError, match=r"the file is empty"):
        _parse(h)


def test_binary(tmp_path: Path) -> None:
    h = tmp_path / "miopen.h"
    h.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8)
    with pytest.raises(HeaderError, match=r"binary file, not a C header"):
        _parse(h)


def test_not_utf8(tmp_path: Path) -> None:
    h = tmp_path / "miopen.h"
    h.write_bytes(b"/* ok */\nint x; /* \xff\xfe */\n")
    with pytest.raises(HeaderError, match=r"miopen.h:2:11: not UTF-8 text"):
        _parse(h)


def test_truncated(tmp_path: Path) -> None:
    text = FIXTURE_HEADER.read_text()
    cut = text.index("MIOPEN_EXPORT miopenStatus_t miopenSetTensorDescriptor(")
    h = tmp_path / "miopen" / "miopen.h"
    h.parent.mkdir()
    h.write_text(text[: cut + 80])
    with pytest.raises(HeaderError) as e:
        _parse(h)
    assert f"{h}:" in str(e.value) and "error" in str(e.value)


def test_not_miopen(tmp_path: Path) -> None:
    h = tmp_path / "zlib.h"
    h.write_text("#include <stddef.h>\ntypedef struct z_stream_s z_stream;\nint deflate(z_stream *strm, int flush);\n")
    with pytest.raises(HeaderError, match=r"does not look like MIOpen's miopen.h: it declares no enum miopenStatus_t "
                                          r"and none of the target's functions \(prefix miopen\*\)"):
        _parse(h)


_FOREIGN = {
    "zlib.h": "#include <stdarg.h>\ntypedef struct gzFile_s *gzFile;\nint gzprintf(gzFile file, const char *format, ...);\n"
              "int gzvprintf(gzFile file, const char *format, va_list va);\n",
    "vlog.h": "#include <stdarg.h>\nvoid vlog(const char *fmt, va_list ap);\n",
    "complex.h": "double _Complex cmul(double _Complex a, double _Complex b);\n",
    "wide.h": "unsigned __int128 widen(unsigned long long x);\n",
    "bits.h": "struct flags { unsigned a : 3; unsigned b : 5; };\nint set_flags(struct flags *f);\n",
    "vector.h": "typedef float v4 __attribute__((vector_size(16)));\nv4 vadd(v4 a, v4 b);\n",
    "blocks.h": "typedef int (*cmp_fn)(const void *, const void *);\nvoid sort(void *base, cmp_fn cmp, ...);\n",
    "status_only.h": "typedef enum { miopenStatusSuccess = 0 } miopenStatus_t;\nint other(__builtin_va_list v);\n",
}


@pytest.mark.parametrize("name", [*sorted(_FOREIGN), "/usr/include/stdio.h", "/usr/include/stdlib.h",
                                  "/usr/include/zlib.h"])
def test_a_foreign_header_is_named_as_such_before_its_types(tmp_path: Path, name: str) -> None:
    """The identity check comes before any type is bound: a header of another library (with va_list functions,
    _Complex, __int128, bit-fields, vectors: types miogen cannot bind) is "not the target's header"."""
    if name.startswith("/"):
        if not os.path.isfile(name):
            pytest.skip(f"{name} is not installed here")
        h = Path(name)
    else:
        h = tmp_path / name
        h.write_text(_FOREIGN[name])
    with pytest.raises(HeaderError, match=r"does not look like MIOpen's miopen.h") as e:
        _parse(h)
    assert "unsupported type" not in str(e.value)


def test_version_must_be_known(tmp_path: Path) -> None:
    h = tmp_path / "miopen.h"
    shutil.copy(FIXTURE_HEADER, h)
    with pytest.raises(HeaderError, match=r"cannot tell the MIOpen version .*pass --miopen-version"):
        parse_header(h, target())
    with pytest.raises(HeaderError, match=r"--miopen-version: expected X.Y.Z"):
        parse_header(h, target(), version="3.x")
    assert parse_header(h, target(), version="3.00.0").version == Version(3, 0, 0)


def test_compilers_are_found_on_path_as_shutil_finds_them(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`clang_env.which` (no shutil on a parse's path) gives what `shutil.which` gives for a command name, whatever
    $PATH holds: executables, files without the execute bit, directories of the name, repeated and empty
    entries (the current folder), an empty or unset $PATH."""
    folders = {n: tmp_path / n for n in ("exe", "plain", "dir", "later")}
    for f in folders.values():
        f.mkdir()
    for name in ("gcc", "clang", "cc"):
        (folders["exe"] / name).write_text("#!/bin/sh\n")
        (folders["exe"] / name).chmod(0o755)
        (folders["plain"] / name).write_text("")
        (folders["dir"] / name).mkdir()
        (folders["later"] / name).write_text("#!/bin/sh\n")
        (folders["later"] / name).chmod(0o755)
    (tmp_path / "cc").write_text("#!/bin/sh\n")
    (tmp_path / "cc").chmod(0o755)
    monkeypatch.chdir(tmp_path)
    p = {k: str(v) for k, v in folders.items()}
    layouts = [f"{p['exe']}", f"{p['plain']}:{p['dir']}:{p['later']}", f"{p['dir']}:{p['exe']}:{p['exe']}",
               f"{p['plain']}::{p['later']}", f":{p['plain']}", "", f"{p['plain']}:{p['dir']}", None]
    for layout in layouts:
        if layout is None:
            monkeypatch.delenv("PATH")
        else:
            monkeypatch.setenv("PATH", layout)
        for name in ("gcc", "clang", "cc", "no-such-compiler"):
            assert clang_env.which(name) == shutil.which(name), (layout, name)


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(alphabet="0123456789. \t\n٣x", max_size=24),
                 st.from_regex(r"\s*[0-9]{1,8}\.[0-9]{1,8}\.[0-9]{1,8}\s*", fullmatch=True)))
def test_versions_are_read_as_three_ascii_numbers(text: str) -> None:
    """The one version grammar (`Version.parse`, what `--miopen-version`, version headers, spec files, the pin and
    annotations are read with) takes exactly X.Y.Z of up to six ASCII digits each (surrounding space ignored) and
    `str` drops leading zeros; anything else is a CodegenError; the spec rule accepts exactly the canonical
    spelling."""
    import re

    from miogen.base.errors import CodegenError
    from miogen.spec.rules import VERSION

    m = re.fullmatch(r"([0-9]{1,6})\.([0-9]{1,6})\.([0-9]{1,6})", text.strip(), re.ASCII)
    if m is None:
        with pytest.raises(CodegenError):
            Version.parse(text)
    else:
        assert str(Version.parse(text)) == ".".join(str(int(p)) for p in m.groups())
    canonical = m is not None and text == ".".join(str(int(p)) for p in m.groups())
    assert (VERSION.check(text) is None) == canonical


def _hostile(tmp_path: Path, kind: str) -> Path:
    """A file the include graph must never read: /dev/zero, a FIFO, a file over the limit, a symlink to /dev/zero."""
    from miogen.parse.headers import MAX_HEADER_BYTES

    bad = tmp_path / "inc" / "bad.h"
    bad.parent.mkdir(exist_ok=True)
    if kind == "dev-zero":
        return Path("/dev/zero")
    if kind == "fifo":
        os.mkfifo(bad)
    elif kind == "huge":
        with open(bad, "wb") as fh:
            fh.truncate(MAX_HEADER_BYTES + 1)  # sparse: costs no disk
    elif kind == "symlink":
        bad.symlink_to("/dev/zero")
    return bad


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "huge", "symlink"])
@pytest.mark.parametrize("how", ["direct", "quoted", "nested", "shadowed", "shadowed-first", "header"])
def test_hostile_includes_are_refused_before_clang_reads_them(tmp_path: Path, kind: str, how: str) -> None:
    """A header whose include graph reaches /dev/zero, a FIFO, a file over the size limit or a symlink to
    /dev/zero (included <...> through -I, "..." beside it, through another header, through a header whose
    `#include "same.h"` is spelled as a harmless one's in another folder (included before or after it), or passed as the header itself)
    fails at once with the include chain (file:line:col) and how to fix it; the parse runs in a child process
    killed after a timeout, so a hang fails the test instead of hanging it."""
    import subprocess
    import sys

    bad = _hostile(tmp_path, kind)
    inc = tmp_path / "inc"
    inc.mkdir(exist_ok=True)
    h = tmp_path / "miopen.h"
    spelled = f"<{bad.name}>" if bad.parent == inc else f"<{bad}>"
    if how == "quoted":
        spelled = f'"inc/{bad.name}"' if bad.parent == inc else f'"{bad}"'
    if how == "nested":
        (inc / "middle.h").write_text(f"/* a header */\n  #  include {spelled}\n")
        spelled = "<middle.h>"
    if how.startswith("shadowed"):  # `#include "same.h"` twice, from two folders: each resolved from its own folder
        for sub in ("good", "evil"):
            (inc / sub).mkdir()
            (inc / sub / "top.h").write_text('/* a header */\n  #  include "same.h"\n')
        (inc / "good" / "same.h").write_text("int harmless;\n")
        (inc / "evil" / "same.h").symlink_to(bad)
        first, second = ("evil", "good") if how == "shadowed-first" else ("good", "evil")
        h.write_text(f"#include <stddef.h>\n#include <{first}/top.h>\n#include <{second}/top.h>\nint x;\n")
    else:
        h.write_text(f"#include <stddef.h>\n#include {spelled}\nint x;\n")
    header = bad if how == "header" else h
    code = ("import sys\nfrom pathlib import Path\nfrom miogen.parse.headers import ParseOptions\nfrom miogen.parse.parser import parse_header\n"
            "from miogen.base.errors import HeaderError\nfrom tests.helpers import target\n"
            f"try:\n    parse_header(Path(sys.argv[1]), target(), ParseOptions(includes=(Path(sys.argv[2]),)), '1.0.0')\n"
            "except HeaderError as exc:\n    print(exc)\n    sys.exit(3)\n")
    r = subprocess.run([sys.executable, "-c", code, str(header), str(inc)], capture_output=True, text=True,
                       timeout=60, cwd=Path(__file__).resolve().parents[2])
    assert r.returncode == 3, (r.returncode, r.stdout, r.stderr)
    out = r.stdout
    if how == "header":
        assert ("not a regular file" in out or "larger than" in out) and "Traceback" not in r.stderr, out
        return
    if how.startswith("shadowed"):
        line = 2 if how == "shadowed-first" else 3
        assert f"{inc / 'evil' / 'top.h'}:2:14: #include" in out and f"included from {h}:{line}:10" in out, out
        return
    assert f"{h}:2:10: #include" in out or (how == "nested" and f"{inc / 'middle.h'}:2:14: #include" in out), out
    assert ("not a regular file" in out or "larger than" in out) and "fix:" in out, out
    if how == "nested":
        assert f"included from {h}:2:10" in out, out


def test_include_check_reads_a_changed_file_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The include check keeps each file's directives for the next parse of the process (the system headers every
    release includes), by the file's stat: a header changed since, to include a file over the size limit, is read
    again and refused (its size and mtime the same, its ctime not)."""
    from miogen.parse import preamble
    from miogen.parse.headers import MAX_HEADER_BYTES, check_includes

    monkeypatch.setattr(preamble, "RACY_NS", 0)  # files changed just now are kept too (the next test: they are not)

    inc = tmp_path / "inc"
    inc.mkdir()
    with open(inc / "huge.h", "wb") as fh:
        fh.truncate(MAX_HEADER_BYTES + 1)  # sparse: costs no disk
    (inc / "mid.h").write_text("int harmless_abc;\n")
    os.utime(inc / "mid.h", (1_000_000_000, 1_000_000_000))
    h = tmp_path / "miopen.h"
    h.write_text("#include <mid.h>\n")
    args = ["-I", str(inc)]
    check_includes(h, h.read_bytes(), args)  # passes, and keeps mid.h's (no) directives
    (inc / "mid.h").write_text("#include <huge.h>\n")  # the same size and (below) mtime: only its ctime tells
    os.utime(inc / "mid.h", (1_000_000_000, 1_000_000_000))
    with pytest.raises(HeaderError, match=r"mid\.h:1:10: #include <huge\.h> is .*larger than"):
        check_includes(h, h.read_bytes(), args)


def test_include_check_keeps_directives_for_the_next_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The next process (the module's memory emptied) finds the directives of a file the check read in the per-user
    cache and reads it only when its stat changed; a file changed just now is read every time (a filesystem's
    coarse times could give the same stat to other text); with the cache off it reads every file."""
    from miogen.parse import headers

    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "mid.h").write_text("#include <leaf.h>\n")
    (inc / "leaf.h").write_text("int leaf;\n")
    h = tmp_path / "miopen.h"
    h.write_text("#include <mid.h>\n")
    args = ["-I", str(inc)]
    reads: list[str] = []
    read_bounded = headers._read_bounded

    def counted(path: Path, what: str) -> bytes:
        reads.append(path.name)
        return read_bounded(path, what)

    def next_process() -> list[str]:
        reads.clear()
        for memo in (headers._SCANNED, headers._SCANNED_NEW, headers._SCANNED_LOADED):
            memo.clear()
        headers.check_includes(h, h.read_bytes(), args)
        return sorted(reads)

    monkeypatch.setattr(headers, "_read_bounded", counted)
    monkeypatch.setenv("MIOGEN_CACHE_DIR", str(tmp_path / "cache"))
    assert next_process() == ["leaf.h", "mid.h"]
    assert next_process() == ["leaf.h", "mid.h"]  # not kept: changed just now
    monkeypatch.setattr(headers.preamble, "RACY_NS", 0)  # as if changed a while ago
    assert next_process() == ["leaf.h", "mid.h"]
    assert next_process() == []
    (inc / "leaf.h").write_text("int leaf, changed;\n")
    assert next_process() == ["leaf.h"]
    assert next_process() == []
    monkeypatch.setenv("MIOGEN_CACHE_DIR", "")
    assert next_process() == ["leaf.h", "mid.h"]


def test_the_system_folders_name_the_multiarch_folder_sysconfig_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """The include check searches clang's default folders: the multiarch one as sysconfig's MULTIARCH names it,
    read from `sys.implementation` where CPython keeps it, and from sysconfig where it does not."""
    import sys
    import sysconfig

    from miogen.parse import headers

    multiarch = sysconfig.get_config_var("MULTIARCH")
    expected = [d for d in ("/usr/local/include", *([f"/usr/include/{multiarch}"] if multiarch else []), "/usr/include")
                if os.path.isdir(d)]
    assert headers._system_dirs() == expected
    monkeypatch.delattr(sys.implementation, "_multiarch", raising=False)
    assert headers._system_dirs() == expected
    monkeypatch.setattr(sys.implementation, "_multiarch", "other-arch", raising=False)
    monkeypatch.setattr(os.path, "isdir", lambda d: True)
    assert headers._system_dirs() == ["/usr/local/include", "/usr/include/other-arch", "/usr/include"]


@pytest.mark.parametrize("system, platform_name", [("Linux", "linux"), ("Darwin", "darwin"), ("Windows", "win32"),
                                                    ("CYGWIN_NT-10.0", "cygwin"), ("FreeBSD", "freebsd14")])
def test_the_libclang_file_is_the_one_cindex_would_load(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, system: str,
                                                        platform_name: str) -> None:
    """miogen names the libclang file itself (no `platform` import): the file cindex's own `get_filename` names on
    each platform, in the wheel's folder where it is there, else the bare name for the loader to search."""
    import platform
    import sys

    import clang.cindex as ci

    monkeypatch.setattr(platform, "system", lambda: system)
    monkeypatch.setattr(sys, "platform", platform_name)
    for folder in (str(tmp_path), ci.Config.library_path):
        for name in ("libclang.so", "libclang.dylib", "libclang.dll"):
            (tmp_path / name).touch()
        monkeypatch.setattr(ci.Config, "library_file", None)
        monkeypatch.setattr(ci.Config, "library_path", folder)
        assert clang_env.library_file(folder) == ci.Config().get_filename()
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setattr(ci.Config, "library_path", str(empty))
    assert clang_env.library_file(str(empty)) == ci.Config().get_filename()
