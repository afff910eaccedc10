"""Every committed release through one installed package: a stub library of each release is loaded,
the package binds that release's layer, and every typed wrapper calls through with the values of that
release reaching C (the renumbered miopenTensorArgumentId_t constants are the canary)."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from codegen import abi
from codegen.annotate import load_annotations, resolve
from codegen.spec_io import load

from .conftest import Libs, _configure_stub, build_stub
from .helpers import SPECS, target

RELEASES = sorted((p.name[:-5] for p in SPECS.glob("*.*.*.yaml")), key=lambda v: tuple(int(x) for x in v.split(".")))


@pytest.fixture(scope="module")
def stubs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ctypes.CDLL]:
    from concurrent.futures import ThreadPoolExecutor

    root = tmp_path_factory.mktemp("release_stubs")
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:  # the compiles (g++ processes) side by side
        paths = dict(zip(RELEASES, pool.map(lambda v: build_stub(v, root), RELEASES)))
    out = {}
    for v in RELEASES:
        lib = ctypes.CDLL(str(paths[v]))
        _configure_stub(lib)
        out[v] = lib
    return out


@pytest.fixture()
def rebind(runtime_libs: Libs) -> Iterator[None]:
    """Unbinds the session's stub for the test and binds it again afterwards."""
    import miopen

    miopen.unload_library()
    try:
        yield
    finally:
        miopen.unload_library()
        runtime_libs.reset()
        miopen.load_library(runtime_libs.miopen)


def test_the_package_has_every_committed_release() -> None:
    import miopen

    assert list(miopen.RELEASES) == RELEASES


@pytest.mark.parametrize("version", RELEASES)
def test_every_wrapper_calls_through_with_its_release(stubs: dict[str, ctypes.CDLL], rebind: None,
                                                      version: str) -> None:
    import miopen
    from miopen import _generated

    stub = stubs[version]
    miopen.load_library(stub)
    assert miopen.bound_release() == version and miopen.MIOPEN_VERSION == version
    spec = load(SPECS / f"{version}.yaml")
    sem = resolve(spec, load_annotations(SPECS / "annotations.yaml"))
    from codegen.render import plan as make_plan

    pl = make_plan(spec, load_annotations(SPECS / "annotations.yaml"), target(), "# matrix")
    # every wrapper of every release takes the direct call (no parameter of theirs lacks a direct form)
    assert [f.c_name for f in pl.functions if f.direct_args is None] == []
    plans = {f.c_name: (f.py_name, [(p.c_name, p.py) for p in f.params], [p.c_name for p in f.params if p.out])
             for f in pl.functions}
    results = abi.run_call_through(_generated, spec, sem, stub, target().function_prefix, plans, target().version_getter)
    problems = {r.function: r.problems for r in results if r.problems}
    assert problems == {}
    assert len(results) == len(spec.functions)
    # enum values are the release's own: every constant of its spec, by name, through the public spelling
    for e in spec.enums:
        py = pl.enums[[x.c_name for x in pl.enums].index(e.name)].py_name
        cls = getattr(miopen, py)
        for c in e.constants:
            assert int(getattr(cls, c.name)) == c.value, (version, e.name, c.name)


# (the value of miopenTensorBias reaching C) per release, from the real headers
CANARY = {"3.1.0": 10, "3.2.0": 42, "3.3.0": 43, "3.5.2": 43}


@pytest.mark.parametrize("version", RELEASES)
def test_tensor_argument_ids_reach_c_as_their_release_numbers_them(stubs: dict[str, ctypes.CDLL], rebind: None,
                                                                   version: str) -> None:
    import miopen

    stub = stubs[version]
    miopen.load_library(stub)
    stub.miogen_stub_reset()
    if not hasattr(miopen.raw, "miopenTensorArgumentId_t"):
        with pytest.raises(AttributeError, match="TensorArgumentId is not in the bound MIOpen release "
                                                 f"{version}.*releases that have it: 2.20.0"):
            miopen.TensorArgumentId  # noqa: B018
        return
    bias = miopen.TensorArgumentId.miopenTensorBias if "miopenTensorBias" in miopen.TensorArgumentId.__members__ else None
    if bias is None:
        with pytest.raises(AttributeError, match=f"TensorArgumentId.miopenTensorBias is not in the bound MIOpen release {version}"):
            miopen.TensorArgumentId.miopenTensorBias  # noqa: B018
        return
    opts = miopen.create_find_options()
    miopen.set_find_option_preallocated_tensor(opts, bias, 0x1000)
    logged = [line.split("\t") for line in (stub.miogen_stub_log() or b"").decode().splitlines()
              if line.startswith("miopenSetFindOptionPreallocatedTensor")]
    assert logged, "the call reached C"
    ids = dict(item.partition("=")[::2] for item in logged[-1][1:])
    spec_value = next(c.value for e in load(SPECS / f"{version}.yaml").enums if e.name == "miopenTensorArgumentId_t"
                      for c in e.constants if c.name == "miopenTensorBias")
    assert int(ids["id"]) == spec_value == CANARY.get(version, spec_value)


def test_members_of_a_release_bound_before_are_translated_by_name(stubs: dict[str, ctypes.CDLL], rebind: None) -> None:
    """A member kept from before a rebind reaches C as the newly bound release numbers it."""
    import miopen

    with_bias = [v for v in CANARY if v in stubs]
    old, new = with_bias[0], with_bias[-1]
    miopen.load_library(stubs[old])
    kept = miopen.TensorArgumentId.miopenTensorBias
    assert int(kept) == CANARY[old]
    miopen.unload_library()
    miopen.load_library(stubs[new])
    stubs[new].miogen_stub_reset()
    miopen.set_find_option_preallocated_tensor(miopen.create_find_options(), kept, 0x1000)
    line = next(line for line in stubs[new].miogen_stub_log().decode().splitlines()
                if line.startswith("miopenSetFindOptionPreallocatedTensor"))
    assert f"\tid={CANARY[new]}" in line


def test_the_install_has_every_release_sub_package() -> None:
    """The installed package (here the editable one; the wheel: tests/test_packaging.py) holds the
    sub-package of every committed release: setup.py finds them, nothing lists them by hand."""
    import importlib.util

    from .helpers import REPO

    for v in RELEASES:
        name = f"miopen._generated.v{v.replace('.', '_')}"
        found = importlib.util.find_spec(name)
        assert found is not None and found.origin is not None, name
        assert Path(found.origin).read_bytes() == (REPO / "generated" / name.rsplit(".", 1)[1] / "__init__.py").read_bytes()
