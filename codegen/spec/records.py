"""What each committed release is and is proven against: `specs/<target>/releases.yaml`, beside the specs.

One record per release: the ROCm release it shipped in, where its real header came from, and the real libraries
the API and runtime run against (with the tests that do it). `miogen upgrade` writes the record of the release
it adds; the renderer carries the records into the generated package (`_releases.PROVEN`, read by
`python -m miopen`) and the API-changes document (its table of releases). Nothing else lists the releases."""

from __future__ import annotations

from pathlib import Path

from ..base.record import field, record
from ..base.files import write_file
from .releases import Version
from .spec_io import load_as

#: the records file of a spec directory
RECORDS_FILE = "releases.yaml"

_HEAD = """\
# What each committed release is, and what it is proven against (read by the renderer: generated/_releases.py,
# `python -m miopen`, docs/api-changes.md). `make upgrade` adds the record of the release it adds.
#   shipped_in: the platform release it shipped in (for MIOpen: ROCm)
#   header:  where its real miopen.h came from (it re-parses to the committed spec byte for byte)
#   abi:     what `make abi-check` found on that header (layout probe, call-through stub)
#   library: the real library builds the API and runtime run against, and the tests that do it
"""


@record
class ReleaseRecord:
    """One committed release's record (every field may be empty: unknown)."""

    shipped_in: str = ""
    header: str = ""
    abi: str = ""
    library: str = ""


@record
class ReleaseRecords:
    """The records file: release (X.Y.Z) -> its record."""

    releases: dict[Version, ReleaseRecord] = field(default_factory=dict)


def records_path(spec_dir: Path) -> Path:
    return spec_dir / RECORDS_FILE


def load_records(spec_dir: Path | None) -> dict[Version, ReleaseRecord]:
    """The records of a spec directory (none where it has no records file), oldest release first."""
    if spec_dir is None:
        return {}
    path = records_path(spec_dir)
    if not path.exists():
        return {}
    return dict(sorted(load_as(ReleaseRecords, path).releases.items(), key=lambda kv: kv[0]))


def dumps_records(records: dict[Version, ReleaseRecord]) -> str:
    """The records file's text: the releases oldest first, every field on one line (JSON-quoted: valid YAML)."""
    import json

    lines = [_HEAD, "releases:"]
    for version, rec in sorted(records.items(), key=lambda kv: kv[0]):
        lines.append(f"  {version}:")
        lines += [f"    {name}: {json.dumps(value, ensure_ascii=False)}"
                  for name, value in rec.__dict__.items() if value]
    return "\n".join(lines) + "\n"


def add_record(spec_dir: Path, version: Version, record: ReleaseRecord) -> Path:
    """Write `version`'s record into the spec directory's records file (replacing one it had)."""
    records = {**load_records(spec_dir), version: record}
    path = records_path(spec_dir)
    write_file(path, dumps_records(records))
    return path
