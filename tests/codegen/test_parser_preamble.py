"""The precompiled preamble (codegen/parse/preamble.py): a parse with it gives the spec a parse without it gives, byte
for byte, or it is not used; every problem with it falls back to the plain parse.

The HIP header here is a small stand-in put before miogen's shims on the include path (`-I`), so these tests do
not depend on the HIP headers the machine has; tests/real/library/test_real_specs.py re-parses the real headers both ways."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from miogen.base.record import replace
from miogen.parse import preamble
from miogen.base.errors import HeaderError, SpecError
from miogen.parse.headers import ParseOptions, clang_args
from miogen.parse.parser import parse_header
from miogen.spec.spec_io import dumps, loads
from miogen.spec.target import load_target

from ..helpers import FIXTURE_HEADER, REPO, release_header, target

HIP = """#ifndef FAKE_HIP_H
#define FAKE_HIP_H
#include <stdint.h>
typedef struct ihipStream_t* hipStream_t;
#ifdef FAKE_HIP_WIDE
#define HIP_INDEX long long
#else
#define HIP_INDEX int
#endif
#define FAKE_HIP_MARK 1
#endif
"""
USES_HIP = "miopenStatus_t miopenTestIndex(HIP_INDEX index);"
HIP_INCLUDE = "#include <hip/hip_runtime_api.h>"


@pytest.fixture
def used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[bool]]:
    """A fresh process's view (no preamble in memory, the cache in tmp_path); yields, per parse, whether it
    used the preamble."""
    monkeypatch.setenv("MIOGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(preamble, "_MEMO", {})
    monkeypatch.setattr(preamble, "_SEEN", {})
    seen: list[bool] = []
    real = preamble.parse

    def spy(*args: object) -> object:
        tu = real(*args)  # type: ignore[arg-type]
        seen.append(tu is not None)
        return tu

    monkeypatch.setattr(preamble, "parse", spy)
    yield seen


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """One "built" per preamble built from the headers (not loaded from the cache)."""
    built: list[str] = []
    real = preamble._build

    def counting(*args: object, **kw: object) -> object:
        built.append("built")
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(preamble, "_build", counting)
    return built


def _hip(tmp_path: Path, text: str = HIP) -> Path:
    inc = tmp_path / "hipinc"
    (inc / "hip").mkdir(parents=True, exist_ok=True)
    (inc / "hip" / "hip_runtime_api.h").write_text(text)
    return _settled(inc)


def _settled(folder: Path) -> Path:
    """`folder` with the times of everything in it (and its own) an hour back: headers installed a while ago,
    which a build may keep (one changed just before a build may be changing while it reads, and is not kept)."""
    for path in [folder, *folder.rglob("*")]:
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - 3600 * 10**9))
    return folder


def _header(tmp_path: Path, before_hip: str = "", extra: str = USES_HIP, top: str = "") -> Path:
    h = release_header(tmp_path, extra)
    text = h.read_text()
    assert HIP_INCLUDE in text
    text = text.replace(HIP_INCLUDE, before_hip + HIP_INCLUDE).replace("#include <stddef.h>", top + "#include <stddef.h>")
    h.write_text(text)
    return h


def _both(header: Path, inc: Path, beta: bool = True) -> tuple[str, str]:
    """The spec's text with the preamble, and without it."""
    opts = ParseOptions(includes=(inc,), beta=beta)
    return (dumps(parse_header(header, target(), opts)),
            dumps(parse_header(header, target(), replace(opts, preamble=False))))


@pytest.mark.parametrize("beta", [True, False])
def test_fixture_header_same_with_and_without(tmp_path: Path, used: list[bool], beta: bool) -> None:
    inc = _hip(tmp_path)
    with_pch, without = _both(FIXTURE_HEADER, inc, beta)
    assert used == [True]
    assert with_pch == without
    assert with_pch == dumps(parse_header(FIXTURE_HEADER, target(), ParseOptions(includes=(inc,), beta=beta)))
    assert used == [True, True]


def test_built_once_per_process_and_kept_for_the_next(tmp_path: Path, used: list[bool], builds: list[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    inc = _hip(tmp_path)
    header = _header(tmp_path)
    for _ in range(2):
        parse_header(header, target(), ParseOptions(includes=(inc,), beta=True))
    parse_header(FIXTURE_HEADER, target(), ParseOptions(includes=(inc,), beta=True))
    assert builds == ["built"] and used == [True, True, True]
    monkeypatch.setattr(preamble, "_MEMO", {})  # a fresh process: loaded from the cache
    parse_header(header, target(), ParseOptions(includes=(inc,), beta=True))
    assert builds == ["built"] and used[-1]
    assert len(list((tmp_path / "cache" / "pch").glob("*.pch"))) == 1


def test_hiding_the_hip_headers_and_back_rebuilds_nothing(tmp_path: Path, used: list[bool], builds: list[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The same arguments find one HIP header, then (that one hidden, as a mount over its folder hides it) the
    next on the include path, then the first again: each set of files keeps its own cached preamble, so the
    third parse loads the first's."""
    inc = _hip(tmp_path)
    other = tmp_path / "other"
    (other / "hip").mkdir(parents=True)
    (other / "hip" / "hip_runtime_api.h").write_text(HIP.replace("FAKE_HIP_MARK 1", "FAKE_HIP_MARK 2"))
    _settled(other)
    header = _header(tmp_path)
    opts = ParseOptions(includes=(inc, other), beta=True)
    plain = dumps(parse_header(header, target(), replace(opts, preamble=False)))
    stats = {d: d.stat() for d in (inc, inc / "hip")}
    hidden = tmp_path / "hip-hidden"
    texts = []
    for step in ("first", "hidden", "first again"):
        monkeypatch.setattr(preamble, "_MEMO", {})  # each parse a fresh process
        if step == "hidden":
            (inc / "hip").rename(hidden)
        elif step == "first again":
            hidden.rename(inc / "hip")
        for d, st in stats.items():  # as a mount over the folder leaves its times
            if d.exists():
                os.utime(d, ns=(st.st_atime_ns, st.st_mtime_ns))
        texts.append(dumps(parse_header(header, target(), opts)))
    assert texts == [plain, plain, plain]
    assert builds == ["built", "built"]  # the first header's preamble, the other's; none the third time
    assert used == [True, True, True]
    assert len(list((tmp_path / "cache" / "pch").glob("*.pch"))) == 2


def test_a_fresh_command_reuses_the_cached_file(tmp_path: Path) -> None:
    inc = _hip(tmp_path)
    env = {**os.environ, "MIOGEN_CACHE_DIR": str(tmp_path / "cache")}
    outs = []
    for n in range(2):
        out = tmp_path / f"out{n}.yaml"
        subprocess.run([sys.executable, "-m", "miogen", "parse", str(FIXTURE_HEADER), "-I", str(inc), "-o", str(out)],
                       check=True, env=env, capture_output=True)
        outs.append(out.read_text())
        if n == 0:
            pch = next((tmp_path / "cache" / "pch").glob("*.pch"))
            stamp = pch.stat().st_mtime_ns
    assert outs[0] == outs[1] and outs[0]
    assert pch.stat().st_mtime_ns == stamp  # not rebuilt


def test_a_changed_preamble_header_is_seen(tmp_path: Path, used: list[bool], monkeypatch: pytest.MonkeyPatch) -> None:
    """Stale: a preamble file changed after the PCH was built, in another size, or in the same size within the same
    second (which clang's own check of a PCH's inputs lets through). The same process and a fresh one both build
    it anew; the spec follows the new header."""
    inc = _hip(tmp_path)
    header = _header(tmp_path)
    first = dumps(parse_header(header, target(), ParseOptions(includes=(inc,))))
    assert used == [True] and _index_type(first) == "int"
    hip = inc / "hip" / "hip_runtime_api.h"
    for old, new, later_ns in (("int", "long", 10**9), ("long", "char", 1_000)):
        st = hip.stat()
        hip.write_text(hip.read_text().replace(f"#define HIP_INDEX {old}", f"#define HIP_INDEX {new}"))
        os.utime(hip, ns=(st.st_atime_ns, st.st_mtime_ns + later_ns))
        with_pch, without = _both(header, inc, beta=False)
        assert with_pch == without and _index_type(with_pch) == new
        assert used[-1] is True  # this process built it anew
        monkeypatch.setattr(preamble, "_MEMO", {})
        with_pch, without = _both(header, inc, beta=False)
        assert with_pch == without and _index_type(with_pch) == new and used[-1] is True  # a fresh one loads it


def _index_type(spec_text: str) -> str:
    """The integer type the header's miopenTestIndex takes (HIP_INDEX, from the HIP stand-in)."""
    return loads(spec_text).function("miopenTestIndex").params[0].type.name


@pytest.mark.parametrize("case", ["truncated", "corrupt", "not json", "another libclang"])
def test_a_bad_cache_file_falls_back_or_rebuilds(tmp_path: Path, used: list[bool], monkeypatch: pytest.MonkeyPatch,
                                                 case: str) -> None:
    inc = _hip(tmp_path)
    header = _header(tmp_path)
    good, _ = _both(header, inc)
    folder = tmp_path / "cache" / "pch"
    pch = next(folder.glob("*.pch"))
    manifest_path = pch.with_suffix(".json")
    data = pch.read_bytes()
    if case == "truncated":
        pch.write_bytes(data[: len(data) // 2])
    elif case == "corrupt":  # same size, other bytes: its hash tells
        bad = bytearray(data)
        for i in range(len(bad) // 3, len(bad), 997):
            bad[i] ^= 0x5A
        pch.write_bytes(bytes(bad))
    elif case == "not json":
        manifest_path.write_text("{")
    else:
        monkeypatch.setattr(preamble, "_libclang", lambda ci: ["clang version 0.0.1", "/elsewhere", 1, 2])
    monkeypatch.setattr(preamble, "_MEMO", {})
    used.clear()
    again, without = _both(header, inc)
    assert again == good == without
    assert used == [True]  # rebuilt (or built under the other libclang's key)
    if case == "another libclang":
        assert len(list(folder.glob("*.pch"))) == 2


def test_each_set_of_arguments_has_its_own(tmp_path: Path, used: list[bool]) -> None:
    """Clang accepts a PCH built with a macro the parse does not define: the key keeps them apart."""
    inc = _hip(tmp_path)
    header = _header(tmp_path)
    specs = []
    for defines in ((), ("FAKE_HIP_WIDE",), ()):
        opts = ParseOptions(includes=(inc,), defines=defines)
        specs.append(dumps(parse_header(header, target(), opts)))
        assert specs[-1] == dumps(parse_header(header, target(), replace(opts, preamble=False)))
    assert used == [True, True, True]
    assert [_index_type(s) for s in specs] == ["int", "long long", "int"]
    assert len(list((tmp_path / "cache" / "pch").glob("*.pch"))) == 2


@pytest.mark.parametrize("cache", ["off", "unwritable"])
def test_without_a_usable_cache(tmp_path: Path, used: list[bool], monkeypatch: pytest.MonkeyPatch, cache: str) -> None:
    """No cache (MIOGEN_CACHE_DIR empty) or one where the PCH cannot be written: the first parse runs without the
    preamble, later ones of the process share one kept in a temporary folder (or none)."""
    inc = _hip(tmp_path)
    header = _header(tmp_path)
    plain = dumps(parse_header(header, target(), ParseOptions(includes=(inc,), preamble=False)))
    if cache == "off":
        monkeypatch.setenv("MIOGEN_CACHE_DIR", "")
    else:
        args = clang_args(ParseOptions(includes=(inc,)), target(), False)
        folder = tmp_path / "cache" / "pch"
        folder.mkdir(parents=True)
        key = preamble._key(preamble.cindex(), args, target())
        real_write = preamble._write

        def refused(path: Path, data: object) -> None:
            if path.name.startswith(key):
                raise PermissionError(13, "Permission denied", str(path))
            real_write(path, data)  # type: ignore[arg-type]

        monkeypatch.setattr(preamble, "_write", refused)
    for _ in range(3):
        assert dumps(parse_header(header, target(), ParseOptions(includes=(inc,)))) == plain
    assert used == ([False, True, True] if cache == "off" else [False, False, False])


@pytest.mark.parametrize("where", [
    "code before", "define it sees", "macro it defines", "pragma pack", "inactive include", "other order",
    "define in an earlier include", "pragma diagnostic error", "quoted include", "never included",
])
def test_a_header_that_the_preamble_could_change(tmp_path: Path, used: list[bool], where: str) -> None:
    """Something before the preamble's last header that it would see (or miss) if parsed first: not used, and the
    spec is the plain parse's."""
    inc = _hip(tmp_path)
    before, top = "", ""
    if where == "code before":
        before = "typedef int early_t;\n"
    elif where == "define it sees":
        before = "#define FAKE_HIP_WIDE 1\n"
    elif where == "macro it defines":
        before = "#ifdef FAKE_HIP_MARK\n#endif\n"
    elif where == "pragma pack":
        before = "#pragma pack(push, 1)\n#pragma pack(pop)\n"
    elif where == "pragma diagnostic error":
        before = "#pragma clang diagnostic error \"-Wunused-macros\"\n"
    elif where == "other order":
        top = HIP_INCLUDE + "\n"
    elif where == "define in an earlier include":
        (inc / "miopen").mkdir()
        shim = (REPO / "specs" / "miopen" / "shims" / "miopen" / "config.h").read_text()
        (inc / "miopen" / "config.h").write_text(shim.replace("#endif", "#define FAKE_HIP_WIDE 1\n#endif"))
    header = _header(tmp_path, before, top=top)
    if where in ("quoted include", "never included"):
        text = header.read_text()
        new = '#include "hip/hip_runtime_api.h"' if where == "quoted include" else \
            "#include <stdint.h>\ntypedef struct ihipStream_t* hipStream_t;\n#define HIP_INDEX int"
        header.write_text(text.replace(HIP_INCLUDE, new))
    if where == "inactive include":
        header.write_text(header.read_text().replace(HIP_INCLUDE, "#if 0\n" + HIP_INCLUDE + "\n#endif"))
        with pytest.raises(HeaderError) as plain_error:
            parse_header(header, target(), ParseOptions(includes=(inc,), preamble=False))
        with pytest.raises(HeaderError) as error:
            parse_header(header, target(), ParseOptions(includes=(inc,)))
        assert str(error.value) == str(plain_error.value)
        assert used == [False]
        return
    with_pch, without = _both(header, inc)
    assert with_pch == without
    assert used == [False]
    if where in ("define it sees", "define in an earlier include"):
        assert _index_type(with_pch) == "long long"


def test_diagnostics_keep_their_place(tmp_path: Path, used: list[bool]) -> None:
    inc = _hip(tmp_path)
    header = _header(tmp_path, extra=USES_HIP + "\nmiopenStatus_t miopenBroken(undeclared_t x);")
    messages = []
    for on in (True, False):
        with pytest.raises(HeaderError) as error:
            parse_header(header, target(), ParseOptions(includes=(inc,), preamble=on))
        messages.append(str(error.value))
    assert messages[0] == messages[1]
    line = header.read_text().splitlines().index("miopenStatus_t miopenBroken(undeclared_t x);") + 1
    assert f"{header}:{line}:29: error:" in messages[0]


def test_not_built_over_the_shims(tmp_path: Path, used: list[bool], monkeypatch: pytest.MonkeyPatch) -> None:
    """A preamble header found among the target's shims: no PCH (the shims parse quicker than one loads). Where no
    other search directory holds it, that is known from the folders alone; where one does (here: named by -I, or
    by a path variable clang reads) the preamble is made."""
    t = replace(target(), preamble=("stddef.h", "stdbool.h", "miopen/config.h"))  # config.h: the shim's
    args = clang_args(ParseOptions(), t, True)
    monkeypatch.setattr(preamble, "_key", lambda *a: pytest.fail("no key is needed to know"))
    assert preamble.preamble(args, t) is None
    spec = parse_header(FIXTURE_HEADER, t, ParseOptions(beta=True))
    assert used == [False]
    assert dumps(spec) == dumps(parse_header(FIXTURE_HEADER, t, ParseOptions(beta=True, preamble=False)))
    monkeypatch.undo()
    monkeypatch.setenv("MIOGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(preamble, "_MEMO", {})
    real = tmp_path / "inc"
    (real / "miopen").mkdir(parents=True)
    (real / "miopen" / "config.h").write_text("#define MIOPEN_BACKEND_HIP 1\n")
    _settled(real)
    for variable, options in (("", ParseOptions(includes=(real,))), ("CPATH", ParseOptions())):
        with monkeypatch.context() as m:
            if variable:
                m.setenv(variable, str(real))
            a = clang_args(options, t, True)
            assert not preamble._only_in_shims(a, t)
            built = preamble.preamble(a, t)
            assert built is not None and built.pch is not None
            assert not any(f.startswith(str(t.shim_dir)) for f in built.files)
    monkeypatch.setattr(preamble, "_only_in_shims", lambda *a: False)  # the build's own check, where a shim is read
    built = preamble.preamble(args, t)
    assert built is not None and built.pch is None
    assert any(f.startswith(str(t.shim_dir)) for f in built.files)


def test_target_preamble_key_is_checked(tmp_path: Path) -> None:
    text = (REPO / "specs" / "miopen" / "target.yaml").read_text()
    assert "\npreamble: [" in text
    bad = tmp_path / "target.yaml"
    bad.write_text(text.replace("preamble: [stddef.h,", "preamble: [../stddef.h,"))
    with pytest.raises(SpecError) as error:
        load_target(bad)
    message = str(error.value)
    assert str(bad) in message and "preamble" in message and "header name" in message


def test_the_key_follows_what_decides_the_headers_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The include-path variables clang's driver reads, and the folder a relative -I names, are in the key: another
    value finds other headers, so it gets a preamble of its own."""
    args = clang_args(ParseOptions(includes=(Path("inc"),)), target(), False)

    def key() -> str:
        return preamble._key(preamble.cindex(), args, target())

    for variable in preamble._PATH_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    base = key()
    for variable in preamble._PATH_VARIABLES:
        monkeypatch.setenv(variable, str(tmp_path))
        assert key() != base, variable
        monkeypatch.delenv(variable)
    assert key() == base
    monkeypatch.chdir(tmp_path)
    assert key() != base  # the same relative -I, another folder


@pytest.mark.parametrize("changed", ["header", "folder"])
def test_an_input_changed_just_before_the_build_is_not_kept(tmp_path: Path, used: list[bool], builds: list[str],
                                                            monkeypatch: pytest.MonkeyPatch, changed: str) -> None:
    """A preamble header (or a folder searched for one) whose mtime is not older than the build by RACY_NS may have
    changed while clang read it: its preamble serves the process that built it, is not kept in the cache, and the
    next process builds its own; once the inputs have settled, it is kept and loaded."""
    import time

    inc = _hip(tmp_path)
    header = _header(tmp_path)
    touched = inc / "hip" / "hip_runtime_api.h" if changed == "header" else inc / "hip"
    st = touched.stat()
    os.utime(touched, ns=(st.st_atime_ns, time.time_ns()))
    opts = ParseOptions(includes=(inc,), beta=True)
    texts = [dumps(parse_header(header, target(), opts))]
    assert used == [True] and builds == ["built"]
    assert not list((tmp_path / "cache" / "pch").glob("*.json"))
    monkeypatch.setattr(preamble, "_MEMO", {})  # a fresh process: nothing to load, built again
    texts.append(dumps(parse_header(header, target(), opts)))
    assert used == [True, True] and builds == ["built", "built"]
    _settled(inc)
    for _ in range(2):  # settled: built and kept, then loaded by the next process
        monkeypatch.setattr(preamble, "_MEMO", {})
        texts.append(dumps(parse_header(header, target(), opts)))
    assert used == [True] * 4 and builds == ["built"] * 3
    assert len(list((tmp_path / "cache" / "pch").glob("*.json"))) == 1
    assert texts == [dumps(parse_header(header, target(), replace(opts, preamble=False)))] * 4
