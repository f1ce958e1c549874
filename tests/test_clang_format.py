"""What mpsgen writes into .mm and .metal files is a fixed point of clang-format run with
PyTorch's settings (tests/clang-format.yaml), as upstream's lint requires."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mpsgen.edits.metal import MetalAddition, add_op
from mpsgen.edits.mm import KernelAddition, add_kernel
from mpsgen.codegen.functor import render_functor
from mpsgen.report.practice import PRACTICE_TREE
from mpsgen.spec.registrations import plan_registrations
from mpsgen.spec.op import FunctorSource, OpSpec
from mpsgen.tree.metal import scan_metal

STYLE = Path(__file__).parent / "clang-format.yaml"
OPS = PRACTICE_TREE / "aten/src/ATen/native/mps/operations"
KERNELS = PRACTICE_TREE / "aten/src/ATen/native/mps/kernels"
BASE = {
    n
    for n, d in scan_metal((PRACTICE_TREE / "c10/metal/indexing.h").read_text()).macros.items()
    if n.startswith("REGISTER_") and d.params and d.params[0] == "NAME"
}


@pytest.fixture(scope="module")
def clang_format():
    exe = shutil.which("clang-format")
    if exe is None:
        pytest.fail("clang-format must be installed for the tests (pip install -e '.[test]')")
    return exe


def formatted(exe: str, text: str, filename: str, tmp_path: Path) -> str:
    (tmp_path / ".clang-format").write_text(STYLE.read_text())
    return subprocess.run(
        [exe, f"--assume-filename={tmp_path / filename}", "--style=file"],
        input=text, capture_output=True, text=True, check=True, cwd=tmp_path,
    ).stdout


@pytest.mark.parametrize("file", ["BinaryKernel.mm", "UnaryKernel.mm"])
def test_fixtures_are_clang_clean(clang_format, tmp_path, file):
    text = (OPS / file).read_text()
    assert formatted(clang_format, text, "x.mm", tmp_path) == text


@pytest.mark.parametrize(
    "addition",
    [
        KernelAddition("heaviside", "heaviside_stub", "binary", False, None),
        KernelAddition("sub_alpha", "sub_stub", "binary", True, None),
        KernelAddition("a_very_long_operator_name_that_pushes_the_signature_past_the_column_limit", "s_stub", "binary", True, None),
        KernelAddition("x" * 100, "s_stub", "binary", True, None),
    ],
    ids=["binary", "alpha", "wrapped", "broken"],
)
def test_host_kernel_is_clang_clean(clang_format, tmp_path, addition):
    out = add_kernel((OPS / "BinaryKernel.mm").read_text(), addition)
    assert out != (OPS / "BinaryKernel.mm").read_text()
    assert formatted(clang_format, out, "x.mm", tmp_path) == out


def test_helper_macro_instance_is_clang_clean(clang_format, tmp_path):
    out = add_kernel((OPS / "UnaryKernel.mm").read_text(), KernelAddition("acosh", "acosh_stub", "unary", False, "REGISTER_UNARY_TI_DISPATCH"))
    assert formatted(clang_format, out, "x.mm", tmp_path) == out


@pytest.mark.parametrize(
    "file, spec",
    [
        ("BinaryKernel.metal", OpSpec("heaviside", "binary", FunctorSource(expr="a == T(0) ? b : static_cast<T>(a > T(0))"), ("integer",))),
        ("BinaryKernel.metal", OpSpec("atan2", "binary", FunctorSource(expr="::precise::atan2(float(a), float(b))"), ("int2float", "complex"))),
        ("UnaryKernel.metal", OpSpec("special_ndtri", "unary", FunctorSource(expr="x"), ("int2float",))),
        ("UnaryKernel.metal", OpSpec("frac", "unary", FunctorSource(expr="x - ::metal::trunc(x)"))),
        ("UnaryKernel.metal", OpSpec("a_rather_long_operator_name", "unary", FunctorSource(), ("int2float",))),
    ],
    ids=["heaviside", "atan2", "special_ndtri", "frac", "scaffold-long"],
)
def test_metal_additions_are_clang_clean(clang_format, tmp_path, file, spec):
    text = (KERNELS / file).read_text()
    assert formatted(clang_format, text, "x.cpp", tmp_path) == text  # the fixture itself
    plan = plan_registrations(spec, scan_metal(text), BASE, file)
    out = add_op(text, MetalAddition(spec.name, render_functor(spec), plan))
    assert formatted(clang_format, out, "x.cpp", tmp_path) == out


_LIBRARY = sorted((Path(__file__).resolve().parents[1] / "specs").glob("*.yaml")) + sorted(
    (Path(__file__).resolve().parents[1] / "examples" / "specs").glob("*.yaml")
)


@pytest.mark.parametrize("path", _LIBRARY, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_library_functors_are_clang_clean(clang_format, tmp_path, path):
    """A shipped or example spec's functor goes into the kernel file as written: it must
    already be what clang-format (PyTorch's settings, 80 columns for .metal) makes of it."""
    from mpsgen.spec.op import load_spec

    functor = render_functor(load_spec(path))
    assert formatted(clang_format, functor, "x.cpp", tmp_path) == functor
