"""API diff, the breaking-change gate, docs/api-changes.md, and the upgrade flow."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from miogen.base.record import replace
from miogen.spec import model
from miogen.spec.diff import changes_document, diff
from miogen.spec.spec_io import dumps, load

from ..helpers import COMMITTED, FIXTURE_HEADER, REPO, SPECS, fixture_spec, release_header, upgrade_specs_dir


def _run(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "miogen", *args], capture_output=True, text=True, cwd=cwd)


def _kinds(old: model.Spec, new: model.Spec) -> dict[tuple[str, str], bool]:
    return {(c.kind, c.item): c.breaking for c in diff(old, new).changes}


def _with_function(spec: model.Spec, name: str, **changes: object) -> model.Spec:
    fns = tuple(replace(f, **changes) if f.name == name else f for f in spec.functions)  # type: ignore[arg-type]
    return replace(spec, functions=fns)


def test_additions_only_are_not_breaking() -> None:
    d = diff(fixture_spec(False), fixture_spec(True))  # the beta API adds functions, enums, constants
    assert d.changes and not d.breaking
    kinds = {c.kind for c in d.changes}
    assert {"function-added", "enum-added", "constant-added"} <= kinds


def test_every_kind_of_function_change() -> None:
    base = fixture_spec()
    f = base.function("miopenSetTensorDescriptor")
    p = list(f.params)
    int64 = model.CType(kind="int", name="int64_t")
    cases = {
        "param-removed": _with_function(base, f.name, params=tuple(p[:-1])),
        "param-added": _with_function(base, f.name, params=(*p, replace(p[2], name="extra"))),
        "params-reordered": _with_function(base, f.name, params=(p[0], p[2], p[1], p[3], p[4])),
        "param-renamed": _with_function(base, f.name, params=(p[0], p[1], replace(p[2], name="numDims"), p[3], p[4])),
        "param-retyped": _with_function(base, f.name, params=(p[0], p[1], replace(p[2], type=int64), p[3], p[4])),
        "return-retyped": _with_function(base, f.name, returns=int64),
        "stable-to-beta": _with_function(base, f.name, beta=True),
    }
    for kind, new in cases.items():
        found = _kinds(base, new)
        assert (kind, f.name) in found, (kind, found)
        assert found[(kind, f.name)] is True, kind
    const_only = _with_function(base, f.name, params=(
        p[0], p[1], p[2], replace(p[3], type=replace(p[3].type, const=(False, False))), p[4]))
    assert _kinds(base, const_only) == {("param-constness", f.name): False}
    kth = base.function("miopenKthvalueForward")
    kp = list(kth.params)
    no_default = _with_function(base, kth.name, params=(*kp[:-1], replace(kp[-1], default=None)))
    assert _kinds(base, no_default) == {("default-removed", kth.name): True}
    assert _kinds(no_default, base) == {("default-added", kth.name): False}
    promoted = _kinds(_with_function(base, "miopenCatForward", beta=True), _with_function(base, "miopenCatForward",
                                                                                          beta=False))
    assert promoted == {("beta-to-stable", "miopenCatForward"): False}


def test_enum_struct_and_handle_changes() -> None:
    base = fixture_spec()
    dt = base.enum("miopenDataType_t")
    renum = replace(dt, constants=tuple(replace(c, value=c.value + 1) if c.name == "miopenInt64" else c
                                        for c in dt.constants))
    removed = replace(dt, constants=dt.constants[:-1])
    perf = base.record("miopenConvAlgoPerf_t")
    grown = replace(perf, size=24)
    moved = replace(perf, fields=(perf.fields[0], replace(perf.fields[1], offset=8), perf.fields[2]))

    def with_enum(e: model.Enum) -> model.Spec:
        return replace(base, enums=tuple(e if x.name == e.name else x for x in base.enums))

    def with_record(r: model.Record) -> model.Spec:
        return replace(base, records=tuple(r if x.name == r.name else x for x in base.records))

    assert _kinds(base, with_enum(renum)) == {("constant-renumbered", "miopenDataType_t.miopenInt64"): True}
    assert _kinds(base, with_enum(removed)) == {("constant-removed", "miopenDataType_t.miopenInt64"): True}
    assert _kinds(base, with_record(grown)) == {("struct-resized", "miopenConvAlgoPerf_t"): True}
    assert _kinds(base, with_record(moved)) == {("field-moved", "miopenConvAlgoPerf_t.time"): True}
    no_handle = replace(base, handles=base.handles[:-1])
    assert _kinds(base, no_handle) == {("handle-removed", base.handles[-1].name): True}
    assert _kinds(no_handle, base) == {("handle-added", base.handles[-1].name): False}


def test_real_renumbering_stands_out() -> None:
    r = _run("diff", str(SPECS / "3.2.0.yaml"), str(SPECS / "3.3.0.yaml"), "--check")
    assert r.returncode == 1
    first_section = r.stdout.split("###")[1]
    assert first_section.startswith(" Breaking: renumbered enum constants (36)")
    assert "miopenTensorArgumentId_t.miopenTensorActivationX`: RENUMBERED: miopenTensorActivationX was 36, is now 37" \
        in r.stdout
    assert "constant-renumbered: miopenTensorArgumentId_t.miopenTensorBiasX" in r.stderr
    data = json.loads(_run("diff", str(SPECS / "3.1.0.yaml"), str(SPECS / "3.2.0.yaml"), "--format", "json").stdout)
    renumbered = [c for c in data["changes"] if c["kind"] == "constant-renumbered"]
    assert any(c["item"] == "miopenTensorArgumentId_t.miopenTensorActivationX" for c in renumbered)


def test_real_additions_only_exit_zero() -> None:
    r = _run("diff", str(SPECS / "2.15.0.yaml"), str(SPECS / "2.20.0.yaml"), "--check")
    assert r.returncode == 0, r.stderr
    assert "44 changes, 0 breaking." in r.stdout
    assert "`miopenSetTensorDescriptor`: parameter dimsA: int * -> const int *" in r.stdout


def test_bad_inputs(tmp_path: Path) -> None:
    spec = SPECS / "3.3.0.yaml"
    r = _run("diff", str(spec), str(spec))
    assert r.returncode == 2 and "was compared with itself" in r.stderr
    copy = tmp_path / "copy.yaml"
    shutil.copy(spec, copy)
    r = _run("diff", str(spec), str(copy))
    assert r.returncode == 2 and "are the same spec (MIOpen 3.3.0" in r.stderr
    other = tmp_path / "v2.yaml"
    other.write_text(spec.read_text().replace("schema_version: 1", "schema_version: 2", 1))
    r = _run("diff", str(spec), str(other))
    assert r.returncode == 2 and "has schema version 1 but" in r.stderr and "has 2" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.long
def test_api_changes_document_is_current() -> None:
    text = changes_document(sorted(SPECS.glob("*.*.*.yaml")))
    assert (REPO / "docs" / "api-changes.md").read_text() == text
    specs = sorted((load(p) for p in SPECS.glob("*.*.*.yaml")), key=lambda s: s.version)
    pairs = list(zip(specs, specs[1:]))
    assert text.count("\n## MIOpen ") == len(pairs)
    for old, new in pairs:  # one section per consecutive pair of committed releases
        assert f"## MIOpen {old.version} → {new.version}" in text
    assert "| **total** | " + " | ".join(f"**{len(s.functions)}**" for s in specs) + " |" in text


def test_added_in_is_recorded_from_history() -> None:
    added = COMMITTED.added_in()
    assert added["miopenCreate"] == "2.15.0 or earlier"  # the oldest committed release
    assert added["miopenRunSolution"] == "2.20.0"
    assert added["miopenGetSolverName"] == "3.5.2"
    generated = (REPO / "generated" / "_releases.py").read_text()
    assert '"miopenGetSolverName": "3.5.2",' in generated
    assert "added in MIOpen 3.5.2" in (REPO / "generated" / "v3_5_2" / "api.py").read_text()


def test_diff_refuses_specs_of_different_targets(tmp_path: Path) -> None:
    r = _run("diff", str(SPECS / "3.5.2.yaml"), str(REPO / "specs" / "cudnn" / "9.19.0.yaml"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "is a miopen spec but" in r.stderr and "is a cudnn spec" in r.stderr and "same library" in r.stderr


# ------------------------------------------------------------------ the upgrade flow


_NEW_SCRATCH = "MIOPEN_EXPORT miopenStatus_t miopenNewScratch(miopenHandle_t handle, void* scratchPad);"


def _paste_suggestion(specs: Path, stderr: str, **values: str) -> None:
    """Append the gate's suggested block to annotations.yaml, with each `...` filled in."""
    lines = stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("add to ")) + 1
    block = []
    for line in lines[start:]:
        if not line.startswith("  "):
            break
        line = line.split("  #")[0].replace("why: ...", "why: test")
        for key, value in values.items():
            line = line.replace(f"{key}: ...", f"{key}: {value}")
        block.append(line)
    assert "..." not in "\n".join(block)
    with (specs / "annotations.yaml").open("a") as f:
        f.write("\n".join(block) + "\n")


def test_upgrade_lists_the_annotation_to_add(tmp_path: Path) -> None:
    specs = upgrade_specs_dir(tmp_path, fixture_spec())
    header = release_header(tmp_path, _NEW_SCRATCH, "3.5.0")
    r = _run("upgrade", str(header), "--specs", str(specs))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "## MIOpen 3.4.1 → 3.5.0" in r.stdout and "`miopenNewScratch`" in r.stdout
    assert "miopenNewScratch.scratchPad (void *): unclassified direction" in r.stderr
    # one complete block, scoped to the releases that have the function: valid for the older spec too
    assert "valid for releases 3.4.1, 3.5.0):\n  miopenNewScratch:\n    since: 3.5.0\n    params:\n" \
           "      scratchPad: {direction: ..., why: ...}  # void *: direction: in | out | inout" in r.stderr
    assert not (specs / "3.5.0.yaml").exists() and (specs / "pinned").read_text().strip() == "3.4.1"
    _paste_suggestion(specs, r.stderr, direction="inout")
    r = _run("upgrade", str(header), "--specs", str(specs))
    assert r.returncode == 0, r.stderr
    assert (specs / "pinned").read_text().strip() == "3.5.0"
    assert load(specs / "3.5.0.yaml").function("miopenNewScratch").params[1].name == "scratchPad"
    # the pasted annotation holds for every release: the gate passes on the old and the new spec
    r = _run("check", str(specs / "3.4.1.yaml"), str(specs / "3.5.0.yaml"), "--annotations",
             str(specs / "annotations.yaml"), "--summary")
    assert r.returncode == 0 and "check: 2 spec(s) valid (3.4.1, 3.5.0), annotation gate passed" in r.stdout, r.stderr


def test_upgrade_without_since_fails_on_the_older_release(tmp_path: Path) -> None:
    """What the issue hit: an annotation for a new function without `since:` breaks the older specs; the
    upgrade gates every committed release, so it says so before writing anything."""
    specs = upgrade_specs_dir(tmp_path, fixture_spec())
    with (specs / "annotations.yaml").open("a") as f:
        f.write("  miopenNewScratch:\n    params:\n      scratchPad: {direction: inout}\n")
    r = _run("upgrade", str(release_header(tmp_path, _NEW_SCRATCH, "3.5.0")), "--specs", str(specs))
    assert r.returncode == 1
    assert "annotation for miopenNewScratch: no such function in miopen 3.4.1" in r.stderr
    assert not (specs / "3.5.0.yaml").exists() and (specs / "pinned").read_text().strip() == "3.4.1"


def test_upgrade_is_transactional(tmp_path: Path) -> None:
    specs = upgrade_specs_dir(tmp_path, fixture_spec())
    header = release_header(tmp_path, "MIOPEN_EXPORT miopenStatus_t miopenNewCount(miopenHandle_t handle, int* count);",
                     "3.5.0")
    out = tmp_path / "generated"
    out.mkdir()
    (out / "a.py").write_text("old\n")
    docs = tmp_path / "changes.md"
    # a failing verification (make generate / make test) rolls everything back
    r = _run("upgrade", str(header), "--specs", str(specs), "--restore", str(out), "--restore", str(docs),
             "--verify", f"echo new > {out}/a.py && touch {out}/b.py && echo x > {docs}", "--verify", "exit 3")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "phase verify: `exit 3` failed (exit 3)\nmiogen: rolled back" in r.stderr
    assert not (specs / "3.5.0.yaml").exists() and (specs / "pinned").read_text().strip() == "3.4.1"
    assert sorted(p.name for p in out.iterdir()) == ["a.py"] and (out / "a.py").read_text() == "old\n"
    assert not docs.exists()
    assert sorted(p.name for p in specs.iterdir()) == ["3.4.1.yaml", "annotations.yaml", "pinned"]
    # passing verifications keep the new release, pinned as the newest
    r = _run("upgrade", str(header), "--specs", str(specs), "--restore", str(out), "--verify", "true")
    assert r.returncode == 0, r.stderr
    assert (specs / "3.5.0.yaml").is_file() and (specs / "pinned").read_text().strip() == "3.5.0"
    # an upgrade adds a release and replaces none
    other = release_header(tmp_path / "other", "MIOPEN_EXPORT miopenStatus_t miopenOther(miopenHandle_t handle);", "3.5.0")
    r = _run("upgrade", str(other), "--specs", str(specs))
    assert r.returncode == 2 and "already holds MIOpen 3.5.0" in r.stderr and "replaces none" in r.stderr


def test_upgrade_needs_a_spec_dir_when_installed(tmp_path: Path) -> None:
    r = _run("upgrade", str(FIXTURE_HEADER), "--specs", str(tmp_path))
    assert r.returncode == 2 and "no pinned release" in r.stderr


def test_upgrade_refuses_a_header_older_than_every_committed_release(tmp_path: Path) -> None:
    specs = upgrade_specs_dir(tmp_path, fixture_spec())
    r = _run("upgrade", str(release_header(tmp_path, version="3.2.0")), "--specs", str(specs))
    assert r.returncode == 2
    assert "is MIOpen 3.2.0, older than every committed release (the oldest is 3.4.1)" in r.stderr
    assert "make specs HEADER=" in r.stderr and "MIOPEN_VERSION=3.2.0" in r.stderr


@pytest.mark.parametrize("between", ["3.4.2", "3.4.9", "3.5.0"])
def test_upgrade_adds_a_release_between_two_committed_ones(tmp_path: Path, between: str) -> None:
    """A missing patch or minor release between the oldest and the pinned one is added; the pin stays the
    newest, and the diff is taken against the newest older committed release."""
    specs = upgrade_specs_dir(tmp_path, fixture_spec())
    r = _run("upgrade", str(release_header(tmp_path / "new", version="3.6.0")), "--specs", str(specs), "--verify", "true")
    assert r.returncode == 0, r.stderr
    extra = "MIOPEN_EXPORT miopenStatus_t miopenNewCount(miopenHandle_t handle, int* count);"
    r = _run("upgrade", str(release_header(tmp_path / "mid", extra, between)), "--specs", str(specs), "--verify", "true")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"## MIOpen 3.4.1 → {between}" in r.stdout and "`miopenNewCount`" in r.stdout
    assert "the pinned newest release stays 3.6.0" in r.stdout
    assert (specs / "pinned").read_text().strip() == "3.6.0"
    assert str(load(specs / f"{between}.yaml").version) == between
    assert sorted(p.name for p in specs.glob("*.*.*.yaml")) == sorted(["3.4.1.yaml", f"{between}.yaml", "3.6.0.yaml"])
    # the same header again: committed now, nothing to do
    r = _run("upgrade", str(release_header(tmp_path / "again", extra, between)), "--specs", str(specs))
    assert r.returncode == 0 and f"same API as the committed MIOpen {between}" in r.stdout, r.stderr
