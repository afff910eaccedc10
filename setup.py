"""The package list of the build (everything else is in pyproject.toml).

One sub-package per release directory that `make generate` renders (generated/vX_Y_Z/, from
specs/miopen/X.Y.Z.yaml) is found here, so a release `make upgrade` adds is in the wheel and in the
editable install without any edit."""

import re
from pathlib import Path

from setuptools import setup

_HERE = Path(__file__).resolve().parent

# Data directories are listed as packages too (setuptools warns about every unlisted one). The target
# files (target.yaml, annotations.yaml, the header shims) live in specs/, the source of truth; they
# ship as miogen/targets/<target>/... (pyproject.toml maps the directories), so an installed `miogen`
# parses and renders without a checkout.
_PACKAGES = [
    "miogen", "miogen.base", "miogen.spec", "miogen.parse", "miogen.semantics", "miogen.render", "miogen.prove",
    "miogen.audit", "miogen.workflow", "miogen.support", "miogen.templates", "miogen.templates.release",
    "miogen.targets", "miogen.targets.miopen", "miogen.targets.miopen.shims",
    "miogen.targets.miopen.shims.miopen", "miogen.targets.miopen.shims.hip", "miogen.targets.cudnn",
    "miopen", "miopen.hip", "miopen.opencl", "miopen.ops", "miopen.caffe2", "miopen._generated",
]
_RELEASES = sorted(f"miopen._generated.{d.name}" for d in (_HERE / "generated").iterdir()
                   if re.fullmatch(r"v\d+_\d+_\d+", d.name) and (d / "__init__.py").is_file())

setup(packages=_PACKAGES + _RELEASES)
