"""The package list of the build (everything else is in pyproject.toml).

One sub-package per release directory that `make generate` renders (generated/vX_Y_Z/, from
specs/miopen/X.Y.Z.yaml) is found here, so a release `make upgrade` adds is in the wheel and in the
editable install without any edit."""

import re
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

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


class _BuildPy(build_py):
    """build_py, then the templates compiled into the built package (miogen/templates/__compiled__/, as pip
    compiles .pyc files; a template changed since is compiled where it is used): in the wheel, and in the
    editable install's link tree, which takes a build output that is not a source file as a copy."""

    def run(self) -> None:
        super().run()
        sys.path.insert(0, str(_HERE))  # the generator's source, as `codegen`
        from codegen.render.jinja_env import compile_shipped

        self.compiled = [str(p) for p in compile_shipped(Path(self.build_lib) / "miogen")]

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), *getattr(self, "compiled", [])]


setup(packages=_PACKAGES + _RELEASES, cmdclass={"build_py": _BuildPy})
