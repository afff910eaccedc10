"""The precompiled preamble: clang's PCH of the system headers the target's header includes before its own
declarations (`preamble` in specs/<target>/target.yaml), so a parse loads them instead of parsing them again.

It is built with exactly the parse's clang arguments, shared by every parse of the process, and kept in the
per-user cache (`private_cache`, codegen/base/cache.py) under a key of libclang's version and file, the arguments and
the header names, one variant per set of files they found (installed HIP headers, or the shims where those are
hidden: switching rebuilds nothing); a cached one is used while every file it read keeps its size and mtime, no search directory
that could shadow one of them changes, and the PCH's bytes match their hash. A parse uses it only where it cannot
change the result (`parse`): the header includes the preamble's headers, in its order and in active code, and
nothing before the last of them is more than directives, defines a macro the preamble's files name, names a macro
they define, or sets a pragma other than `once` and diagnostic push/pop/ignored. Anything else (a stale, corrupt or foreign file,
an unwritable cache, an error in the parse) gives None: the caller parses without it. Where a preamble header is
one of the target's shims no PCH is made: the shims parse in less time than a PCH takes to load and check (where
no search directory but the shims' holds one, that is known before any key or manifest is read).
Without the per-user cache a PCH is built only for a second parse with the same arguments.
"""

# no `from __future__ import annotations`: a NamedTuple's annotations made as strings are compiled when its class
# is made (`typing.ForwardRef`), and a process's first compile costs a parse ~9 M instructions
import _thread
import atexit
import contextlib
import ctypes
import json
import os
import re
import time
from pathlib import Path
from typing import Any, NamedTuple

from ..base import cache
from . import conditionals
from .clang_env import cindex
from ..base.cache import private_cache
from ..base.digest import file_sha256, sha256
from ..spec.target import Target

_FORMAT = 1  # of the cache files
#: how long before a build an input's mtime still counts as changed during it (filesystems with coarse times)
RACY_NS = 2 * 10**9
_SYSTEM_DIRS = ("/usr/local/include", "/usr/include")  # searched by clang where no option names them
_SEARCH_OPTIONS = ("-I", "-isystem", "-idirafter", "-iquote")
_FLAGS = ("PARSE_SKIP_FUNCTION_BODIES", "PARSE_INCOMPLETE")  # as the parse's own (codegen/parse/unit.py)

# bytes -> spaces but for identifier characters: split() then gives every identifier (and number) of a file
_WORDS_ONLY = bytes(c if chr(c).isascii() and (chr(c).isalnum() or c == ord("_")) else 32 for c in range(256))
_COMMENT = conditionals.COMMENT_OR_LITERAL
_CONDITIONALS = frozenset(("if", "ifdef", "ifndef", "elif", "elifdef", "elifndef", "else", "endif"))
# the regexes of a preamble's build and checks (compiled at their first use, re keeps them: a parse over the shims
# makes no preamble)
_SOURCE_DEFINES = rb"^[ \t]*#[ \t]*(?:define|undef)[ \t]+([A-Za-z_][A-Za-z0-9_]*)"  # re.M
_DIRECTIVE = r"#[ \t]*([A-Za-z_]*)[ \t]*(.*)"  # re.S
_HEADER_NAME = r'<([^>\n]*)>|"([^"\n]*)"'
_WORD = r"[A-Za-z_][A-Za-z0-9_]*"
# pragmas before the preamble that leave its meaning and its errors alone (not `diagnostic error`, not `pack`)
_SAFE_PRAGMA = r"(?:once|(?:clang|GCC)[ \t]+diagnostic[ \t]+(?:push|pop|ignored))\b"


class Preamble(NamedTuple):
    """One built preamble: its PCH (None: none is made for these arguments) and what its files hold."""

    pch: str | None
    files: frozenset[str]  # every file the preamble read
    identifiers: frozenset[str]  # every identifier those files spell
    defines: frozenset[str]  # every macro they define or undefine
    stamps: tuple[tuple[object, ...], ...] = ()  # `_stamps` of its files and folders when it was built
    checked: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())  # the files and folders those stamps cover

    def current(self) -> bool:
        """Every file it read, and every folder that could shadow one, as when it was built."""
        files, dirs = self.checked
        return _stamps(list(files), list(dirs)) == [list(t) for t in self.stamps]


_LOCK = _thread.allocate_lock()  # the stable and beta parses may ask from two threads
_MEMO: dict[str, Preamble | None] = {}  # key -> the preamble this process uses (None: none)
_SEEN: dict[str, int] = {}  # key -> parses that asked without a cache
_TEMP: list[str] = []


# --------------------------------------------------------------------------- the key and the stamps


def _libclang(ci: Any) -> list[object]:
    """libclang's version string, and its file's path, size and mtime."""
    lib = ctypes.CDLL(ci.conf.lib._name)
    fn = lib.clang_getClangVersion
    fn.argtypes, fn.restype = [], ci._CXString
    text = ci._CXString.from_result(fn())
    st = os.stat(ci.conf.lib._name)
    return [text, ci.conf.lib._name, st.st_size, st.st_mtime_ns]


# what else decides which headers clang finds: the include-path variables its driver reads
_PATH_VARIABLES = ("CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "OBJC_INCLUDE_PATH")


def _key(ci: Any, args: list[str], target: Target) -> str:
    env = [os.environ.get(v) for v in _PATH_VARIABLES]
    ident = [_FORMAT, cache.fingerprint(), _libclang(ci), args, _search_dirs(args), env, list(target.preamble), target.beta_macro,
             str(target.shim_dir)]
    return sha256(json.dumps(ident).encode()).hexdigest()[:32]


def _only_in_shims(args: list[str], target: Target) -> bool:
    """Whether a preamble header is in no search directory but the target's shims (/usr/local/include and
    /usr/include, and those the arguments and the path variables name): the parse then finds the shim, and no PCH
    is made over a shim (`_build`). Told from the folders alone, before any key, manifest or stamp; a header found
    only in another of clang's own folders costs the PCH, never the parse's result."""
    shims = os.path.abspath(target.shim_dir)
    dirs = [d for d in _search_dirs(args) if d != shims]
    for variable in _PATH_VARIABLES:
        dirs += [os.path.abspath(d) for d in os.environ.get(variable, "").split(os.pathsep) if d]
    return any(not any(os.path.isfile(os.path.join(d, name)) for d in dirs) for name in target.preamble)


def _search_dirs(args: list[str]) -> list[str]:
    dirs = [args[i + 1] for i, a in enumerate(args[:-1]) if a in _SEARCH_OPTIONS]
    return [os.path.abspath(d) for d in (*dirs, *_SYSTEM_DIRS)]


def _stamps(files: list[str], dirs: list[str]) -> list[list[object]]:
    """(path, size, mtime) of each file, and the mtime of each directory where a new file could shadow one of
    them: every search directory joined with the folder a file was found in (None where absent)."""
    out: list[list[object]] = []
    folders = {""}
    for f in files:
        try:
            st = os.stat(f)
        except OSError:
            out.append([f, None, None])
            continue
        out.append([f, st.st_size, st.st_mtime_ns])
        for d in dirs:
            if f.startswith(d + "/"):
                folder = os.path.dirname(f[len(d) + 1:])
                while folder:  # and each folder above it: a new sibling (c++/13 beside c++/12) shows there
                    folders.add(folder)
                    folder = os.path.dirname(folder)
    for d in dirs:
        for folder in sorted(folders):
            path = os.path.join(d, folder)
            try:
                out.append([path, None, os.stat(path).st_mtime_ns])
            except OSError:
                out.append([path, None, None])
    return out


# --------------------------------------------------------------------------- build, load


def _load(folder: Path, key: str, args: list[str]) -> Preamble | None:
    """The cached preamble of `key` whose files are all still as they were (one per set of files the
    arguments found: installed HIP headers, or the shims where they are hidden); else None."""
    for manifest_path in sorted(folder.glob(f"{key}-*.json")):
        found = _load_one(folder, manifest_path, key, args)
        if found is not None:
            return found
    return None


def _trusted(path: str | Path) -> bool:
    """Whether a cache file may be used: this user's regular file that nobody else may write (else one warning)."""
    why = cache.untrusted(os.lstat(path), directory=False)
    if why is not None:
        cache.warn(path, why)
    return why is None


def _load_one(folder: Path, manifest_path: Path, key: str, args: list[str]) -> Preamble | None:
    try:
        if not _trusted(manifest_path):
            return None
        manifest = json.loads(manifest_path.read_text("utf-8"))
        if manifest["format"] != _FORMAT or manifest["key"] != key or manifest["args"] != args:
            return None
        stamps = manifest["stamps"]
        if _stamps(manifest["files"], manifest["dirs"]) != stamps:
            return None
        pch = manifest["pch"]
        if pch is not None:
            pch = str(manifest_path.with_suffix(".pch"))
            if not _trusted(pch) or os.path.getsize(pch) != manifest["pch_size"] or file_sha256(pch) != manifest["pch_sha256"]:
                return None
        return Preamble(pch, frozenset(manifest["files"]), frozenset(manifest["identifiers"].split()),
                        frozenset(manifest["defines"].split()), tuple(tuple(t) for t in stamps),
                        (tuple(manifest["files"]), tuple(manifest["dirs"])))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _build(ci: Any, folder: Path, key: str, args: list[str], target: Target, keep: bool) -> Preamble | None:
    """Parse the preamble's headers and save their PCH in `folder` (with its manifest where `keep`)."""
    source = folder / f"{key}.h"
    text = "".join(f"#include <{name}>\n" for name in target.preamble)
    flags = 0
    for name in _FLAGS:
        flags |= getattr(ci.TranslationUnit, name)
    try:
        if not source.is_file() or source.read_bytes() != text.encode():  # kept as it is: every variant stamps it
            _write(source, text.encode())
        started = time.time_ns()
        tu = ci.Index.create().parse(os.fsencode(source), args=[os.fsencode(a) for a in args], options=flags)
    except (OSError, ci.TranslationUnitLoadError):
        return None
    files = [str(source), *dict.fromkeys(inc.include.name for inc in tu.get_includes())]
    shim = str(target.shim_dir) + "/"
    macro = target.beta_macro.encode()
    identifiers: set[bytes] = set()
    defines: set[bytes] = set()
    usable = not any(d.severity >= ci.Diagnostic.Error for d in tu.diagnostics)
    for f in files:
        try:
            data = Path(f).read_bytes()
        except OSError:
            return None
        usable = usable and not f.startswith(shim) and macro not in data  # the beta parse reads all includes
        identifiers.update(data.translate(_WORDS_ONLY).split())
        defines.update(re.findall(_SOURCE_DEFINES, data, re.M))
    # one variant per set of files found (the same arguments find the installed HIP headers, or the shims where
    # those are hidden): each keeps its own PCH and manifest, so switching between them rebuilds nothing
    variant = sha256(json.dumps(files).encode()).hexdigest()[:16]
    pch = str(folder / f"{key}-{variant}.pch")
    manifest: dict[str, object] = {"format": _FORMAT, "key": key, "args": args, "pch": None}
    dirs = _search_dirs(args)
    stamps = _stamps(files, dirs)
    # a file or folder changed since just before the parse may have changed while clang read it, and its stamp now
    # would vouch for what clang did not see: such a preamble is kept for this process only (clang's own check of a
    # PCH's inputs guards that use), and built again by the next one
    if keep and any(isinstance(mtime, int) and mtime >= started - RACY_NS for path, _, mtime in stamps
                    if path != str(source)):
        folder, keep = _temp_folder(), False
        pch = str(folder / f"{key}-{variant}.pch")
    try:
        if usable:
            _write(Path(pch), tu)
            manifest.update(pch=os.path.basename(pch), pch_size=os.path.getsize(pch), pch_sha256=file_sha256(pch))
        manifest.update(files=files, dirs=dirs, stamps=stamps,
                        identifiers=b" ".join(sorted(identifiers)).decode("ascii"),
                        defines=b" ".join(sorted(defines)).decode("ascii"))
        if keep:
            _write(folder / f"{key}-{variant}.json", json.dumps(manifest).encode())
    except (OSError, ci.TranslationUnitSaveError):
        return None
    return Preamble(pch if usable else None, frozenset(files), frozenset(i.decode() for i in identifiers),
                    frozenset(d.decode() for d in defines), tuple(tuple(t) for t in stamps), (tuple(files), tuple(dirs)))


def _write(path: Path, data: bytes | Any) -> None:
    """`data` (bytes, or the translation unit to save) into `path` in one step: a reader sees the old file or
    the new one."""
    partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        if isinstance(data, bytes):
            with contextlib.suppress(FileNotFoundError):
                partial.unlink()
            with open(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as fh:
                fh.write(data)
        else:
            data.save(str(partial))
            os.chmod(partial, 0o600)  # the cache's files are private (codegen/base/cache.py)
        os.replace(partial, path)
    finally:
        with contextlib.suppress(OSError):
            partial.unlink()


def _temp_folder() -> Path:
    if not _TEMP:
        import shutil  # only here: rarely needed
        import tempfile

        _TEMP.append(tempfile.mkdtemp(prefix="miogen-pch-"))
        atexit.register(shutil.rmtree, _TEMP[0], True)
    return Path(_TEMP[0])


def preamble(args: list[str], target: Target) -> Preamble | None:
    """The preamble for a parse with `args` (built or loaded once per process), or None."""
    if not target.preamble or _only_in_shims(args, target):
        return None
    ci = cindex()
    try:
        key = _key(ci, args, target)
    except (OSError, AttributeError, TypeError):
        return None
    with _LOCK:
        if key in _MEMO:
            known = _MEMO[key]
            if known is None or known.current():
                return known
            del _MEMO[key]  # a file it read changed since: load or build the one for what is there now
        folder = private_cache("pch")
        found = _load(folder, key, args) if folder is not None else None
        if found is None:
            if folder is None or not os.access(folder, os.W_OK):
                _SEEN[key] = _SEEN.get(key, 0) + 1
                if _SEEN[key] < 2:  # no cache to keep it in: a single parse is quicker without
                    return None
                try:
                    found = _build(ci, _temp_folder(), key, args, target, keep=False)
                except OSError:
                    found = None
            else:
                found = _build(ci, folder, key, args, target, keep=True)
        _MEMO[key] = found
        return found


def _forget(key_args: list[str], target: Target) -> None:
    """Stop using the preamble of these arguments in this process (clang refused it)."""
    try:
        _MEMO[_key(cindex(), key_args, target)] = None
    except (OSError, AttributeError, TypeError):
        pass


# --------------------------------------------------------------------------- may a header use it


class _Before(NamedTuple):
    """What the header's text (and what it includes) does before its last preamble include (filled in place)."""

    lines: dict[str, int]  # preamble header -> the line of its first `#include` in the header
    defines: set[str]
    names: set[str]


def _directives(text: str, before: _Before, stop: int | None = None) -> bool:
    """Add the macros `text` defines and the identifiers its directives name (up to line `stop`) to `before`,
    and where `stop` is given the lines of the preamble's includes; False where `text` holds more than
    directives, or a directive that may change what follows in other ways."""
    if stop is not None:  # only the lines up to `stop`
        cut = -1
        for _ in range(stop):
            cut = text.find("\n", cut + 1)
            if cut < 0:
                break
        text = text if cut < 0 else text[:cut]
    text = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n") if m.group(0)[0] == "/" else m.group(0), text)
    directive, header_name = re.compile(_DIRECTIVE, re.S), re.compile(_HEADER_NAME)
    word, safe_pragma = re.compile(_WORD), re.compile(_SAFE_PRAGMA)
    line = 0
    logical: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 1
    for raw in text.split("\n"):
        line += 1
        if not pending:
            start = line
        if raw.endswith("\\"):
            pending.append(raw[:-1])
            continue
        logical.append((start, "".join(pending) + raw))
        pending = []
    for at, content in logical:
        s = content.strip()
        if not s:
            continue
        m = directive.fullmatch(s)
        if m is None:
            return False  # a declaration: it would come after the preamble's instead of before
        name, rest = m.groups()
        if name in ("include", "include_next", "import"):
            h = header_name.match(rest)
            if h is None:
                before.names.update(word.findall(rest))  # a computed include
            elif stop is not None and h.group(1) is not None:  # `<name>`, searched as the preamble's are
                before.lines.setdefault(h.group(1), at)
        elif name in ("define", "undef"):
            words = word.findall(rest)
            if not words:
                return False
            before.defines.add(words[0])
            before.names.update(words)
        elif name in _CONDITIONALS:
            before.names.update(word.findall(rest))
        elif name == "pragma":
            if not safe_pragma.match(rest):
                return False
        elif name not in ("", "error", "warning"):
            return False
    return True


def _last_include(text: str, names: tuple[str, ...]) -> int | None:
    """The line of the last of the preamble headers' first `#include`s in `text` (None: one is missing)."""
    end = 0
    for name in names:
        m = re.search(r'^[ \t]*#[ \t]*include[ \t]*[<"]' + re.escape(name) + r'[>"]', text, re.M)
        if m is None:
            return None
        end = max(end, m.end())
    return text.count("\n", 0, end) + 1


class _RangeList(ctypes.Structure):
    _fields_ = [("count", ctypes.c_uint), ("ranges", ctypes.c_void_p)]


def _skipped(ci: Any, tu: Any, header: Path) -> list[tuple[int, int]]:
    """The (first, last) lines of the header that the preprocessor skipped."""
    lib = ctypes.CDLL(ci.conf.lib._name)
    get, dispose = lib.clang_getSkippedRanges, lib.clang_disposeSourceRangeList
    get.argtypes, get.restype = [ci.TranslationUnit, ci.c_object_p], ctypes.POINTER(_RangeList)
    dispose.argtypes, dispose.restype = [ctypes.POINTER(_RangeList)], None
    f = ci.conf.lib.clang_getFile(tu, os.fsencode(header))
    if not f:
        return []
    got = get(tu, f)
    try:
        ranges = ctypes.cast(got.contents.ranges, ctypes.POINTER(ci.SourceRange))
        return [(ranges[i].start.line, ranges[i].end.line) for i in range(got.contents.count)]
    finally:
        dispose(got)


def parse(header: Path, text: str, args: list[str], target: Target) -> Any | None:
    """The translation unit of `header` parsed with the preamble, where that gives what a parse without it
    gives; else None (parse without it)."""
    pre = preamble(args, target)
    if pre is None or pre.pch is None:
        return None
    last = _last_include(text, target.preamble)
    if last is None:
        return None
    before = _Before({}, set(), set())
    if not _directives(text, before, last):
        return None
    lines = [before.lines.get(name) for name in target.preamble]
    if None in lines or lines != sorted(lines):  # type: ignore[type-var]
        return None
    ci = cindex()
    flags = ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD  # for the skipped lines
    for name in _FLAGS:
        flags |= getattr(ci.TranslationUnit, name)
    try:
        tu = ci.Index.create(excludeDecls=True).parse(os.fsencode(header), args=[os.fsencode(a) for a in (*args, "-include-pch", pre.pch)], options=flags)
    except ci.TranslationUnitLoadError:
        _forget(args, target)  # clang refused the PCH (stale, foreign or damaged): not again in this process
        return None
    if any(d.severity >= ci.Diagnostic.Error for d in tu.diagnostics):
        return None  # the plain parse reports the header's errors
    skipped = _skipped(ci, tu, header)
    if any(a <= n <= b for n in lines for a, b in skipped if n is not None):
        return None  # an include the preprocessor skips: the header does not use the preamble there
    main = str(header)
    shadows = tuple("/" + name for name in target.preamble)
    earlier = False
    for inc in tu.get_includes():
        name = inc.include.name
        if name not in pre.files and name.endswith(shadows):
            return None  # another file of a preamble header's name: found first where the preamble's was not
        if inc.depth == 1:
            where = inc.location
            earlier = where.file is not None and where.file.name == main and where.line < last
        if earlier and name not in pre.files:
            try:
                included = Path(name).read_text("utf-8")
            except (OSError, UnicodeDecodeError):
                return None
            if not _directives(included, before):
                return None
    if before.defines & pre.identifiers or before.names & pre.defines:
        return None  # a macro that the preamble's headers would see, or would have defined, differently
    return tu
