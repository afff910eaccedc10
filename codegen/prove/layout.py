"""The layout probe: a g++-compiled program printing every struct's size, alignment and field offsets and
every enum constant, checked against the rendered raw ctypes layer."""

from __future__ import annotations

import ctypes
import json
import subprocess
from pathlib import Path
from types import ModuleType


from ..render.jinja_env import cpp_environment
from ..spec.model import Spec, flat_fields


def probe_source(spec: Spec, header: Path, banner: str) -> str:
    records = [{"name": r.name, "fields": [n for n, _ in flat_fields(r)]} for r in spec.records if r.name]
    enums = [{"name": e.name, "constants": [c.name for c in e.constants]} for e in spec.enums]
    return cpp_environment().get_template("probe.cpp.j2").render(banner=banner, header=str(header), records=records, enums=enums)


def check_layout(probe: Path, raw: ModuleType, spec: Spec) -> list[str]:
    """Differences between the compiler's layout/values (probe output) and the ctypes layer."""
    out = subprocess.run([str(probe)], capture_output=True, text=True, check=True).stdout
    problems: list[str] = []
    checked = 0
    for line in out.splitlines():
        rec = json.loads(line)
        checked += 1
        if "enum" in rec:
            cls = getattr(raw, rec["enum"])
            value = cls[rec["constant"]].value
            if value != rec["value"]:
                problems.append(f"{rec['enum']}.{rec['constant']}: C {rec['value']} vs ctypes {value}")
        elif "field" in rec:
            cls = getattr(raw, rec["record"])
            off = getattr(cls, rec["field"]).offset
            if off != rec["offset"]:
                problems.append(f"{rec['record']}.{rec['field']}: offset C {rec['offset']} vs ctypes {off}")
        else:
            cls = getattr(raw, rec["record"])
            if (ctypes.sizeof(cls), ctypes.alignment(cls)) != (rec["size"], rec["align"]):
                problems.append(f"{rec['record']}: size/align C {rec['size']}/{rec['align']} vs ctypes "
                                f"{ctypes.sizeof(cls)}/{ctypes.alignment(cls)}")
    if checked == 0:
        problems.append("the probe printed nothing")
    return problems
