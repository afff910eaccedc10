"""Versions and the committed releases: one `Version` type, and what a spec directory holds (each
release's spec `<version>.yaml`, the pin file `pinned`, the release that added each function).

The generated package's own copy (codegen/support/_selection.py) is separate: it ships without miogen."""

# no `from __future__ import annotations`: a NamedTuple's annotations made as strings are compiled when its class
# is made (`typing.ForwardRef`), and a process's first compile costs a parse ~9 M instructions
import re
from pathlib import Path
from typing import NamedTuple

from ..base.record import record
from ..base.errors import CodegenError

#: the pin file of a spec directory: the release `make test` and `make upgrade` start from
PIN_FILE = "pinned"
#: a committed spec's file name: <version>.yaml
SPEC_GLOB = "*.*.*.yaml"
_SUFFIX = ".yaml"
_VERSION = re.compile(r"([0-9]{1,6})\.([0-9]{1,6})\.([0-9]{1,6})", re.ASCII)


class Version(NamedTuple):
    """A release X.Y.Z, ordered as numbers (2.20.0 < 3.0.0); `str` gives X.Y.Z."""

    major: int
    minor: int
    patch: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"

    @property
    def module(self) -> str:
        """The release's sub-package of the generated package: v3_5_2."""
        return f"v{self.major}_{self.minor}_{self.patch}"

    @classmethod
    def parse(cls, text: str) -> "Version":
        """'3.2.0' (or '3.02.0') -> Version(3, 2, 0); three ASCII numbers of up to six digits, else CodegenError."""
        m = _VERSION.fullmatch(text.strip()) if isinstance(text, str) else None
        if m is None:
            raise CodegenError(f"expected a version like 3.2.0; got {text!r}")
        return cls(int(m.group(1)), int(m.group(2)), int(m.group(3)))


def spec_version(path: Path) -> Version:
    """The release a committed spec's file name gives (3.3.0.yaml -> 3.3.0)."""
    try:
        if not path.name.endswith(_SUFFIX):
            raise CodegenError(path.name)
        return Version.parse(path.name[: -len(_SUFFIX)])
    except CodegenError:
        raise CodegenError(f"{path}: spec files are named <version>.yaml (e.g. 3.3.0.yaml)") from None


def by_version(paths: list[Path]) -> list[Path]:
    """Spec files, oldest release first (by their names)."""
    return sorted(paths, key=spec_version)


#: a function of the dumped layout starts a line "- name: <name>" (its parameters' entries are indented)
_ENTRY = "\n- name: "


@record
class Releases:
    """The committed releases of one spec directory."""

    directory: Path
    #: release -> its spec file, oldest first
    paths: dict[Version, Path]

    @classmethod
    def of(cls, directory: Path) -> "Releases":
        return cls(directory, {spec_version(p): p for p in by_version(list(directory.glob(SPEC_GLOB)))})

    @property
    def versions(self) -> list[Version]:
        return list(self.paths)

    @property
    def pin_file(self) -> Path:
        return self.directory / PIN_FILE

    def pinned(self) -> Version:
        """The pinned release; an error when there is no pin file or it pins no committed release."""
        pin = self.pin_file
        if not pin.is_file():
            raise CodegenError(f"{pin}: no pinned release (a file holding e.g. 3.5.2); is {self.directory} a spec dir?")
        text = pin.read_text(encoding="utf-8").strip()
        try:
            version = Version.parse(text)
        except CodegenError:
            version = None
        if version is None or version not in self.paths or str(version) != text:
            raise CodegenError(f"{pin} pins {text}, but {self.directory}/{text}.yaml does not exist")
        return version

    def added_in(self) -> dict[str, str]:
        """Function -> first committed release that declares it ("X.Y.Z or earlier" for the oldest).

        Reads only the function names of each spec (the `functions:` section, one `- name:` line per
        function in the dumped layout, found with `str.split`: a fifth of a regular expression's time),
        which keeps rendering fast."""
        if not self.paths:
            raise CodegenError(f"--history {self.directory}: no committed specs (<version>.yaml) there")
        first: dict[str, str] = {}
        oldest = self.versions[0]
        one_word = re.compile(r"\S+").fullmatch  # compiled here: a parse never reads the history
        for version, path in self.paths.items():
            text = path.read_text(encoding="utf-8")
            _, sep, functions = text.partition("\nfunctions:\n")
            if not sep:
                raise CodegenError(f"{path}: no functions section; is this a miogen spec?")
            for entry in ("\n" + functions).split(_ENTRY)[1:]:
                name = entry.partition("\n")[0]
                if name not in first and one_word(name):  # an earlier release's name: taken already
                    first[name] = str(version) if version != oldest else f"{version} or earlier"
        return first
