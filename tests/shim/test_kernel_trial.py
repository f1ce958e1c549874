"""``mpsgen try`` of a kernel spec: the body runs once per output element against torch's CPU
op on edge and random values, size-1 and empty dims and non-contiguous inputs; a wrong body
fails, a body that needs threads to run together is refused; the --with-test file packs the
params struct as C lays it out."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mpsgen.spec.kernel import load_kernel_spec
from mpsgen.core.resources import resource_dir

SPECS = resource_dir("specs") / "kernels"


@pytest.fixture(autouse=True)
def needs_a_compiler():
    if not any(shutil.which(c) for c in ("g++", "clang++", "c++")):
        pytest.fail("a C++ compiler must be installed for the tests (g++ or clang++)")


@pytest.mark.parametrize("op", ["_pdist_forward", "_pdist_backward", "adaptive_max_pool3d_backward"])
def test_the_shipped_kernels_match_the_cpu_op(run, op):
    res = run("try", op)
    assert res.exit_code == 0, res.output
    lines = res.output.strip().split("\n")
    assert lines[-1].startswith("ok: ") and ", 0 failing." in lines[-1]
    for dtype in load_kernel_spec(SPECS / f"{op}.yaml").dtypes:
        assert any(ln.startswith(f"{op.lstrip('_')}_{dtype}: ") and " 0 failing" in ln for ln in lines), lines
    if op.startswith("_pdist"):
        assert "inputs refused, as by the CPU op, by the host's checks" in res.output  # the non-contiguous inputs


@pytest.mark.parametrize(
    "op,wrong,right",
    [
        ("_pdist_forward", "agg += diff * diff;", "agg += diff * diff * 1.001f;"),
        ("_pdist_backward", "agg += lo == r ? b : -b;", "agg += b;"),
        # the strides of grad_output (the one input the CPU op takes non-contiguous) ignored
        ("_pdist_backward", "grad_output[k * params.grad_output_strides[0]]", "grad_output[k]"),
        # a window bound off by one, and the stride of the channel dimension ignored
        ("adaptive_max_pool3d_backward", "if (w < ow * IW / OW ||", "if (w <= ow * IW / OW ||"),
        ("adaptive_max_pool3d_backward", "g0 += coord * params.grad_output_strides[k];", "g0 += coord * params.output_strides[k];"),
    ],
)
def test_a_wrong_body_fails(run, tmp_path: Path, op, wrong, right):
    text = (SPECS / f"{op}.yaml").read_text()
    assert wrong in text
    spec = tmp_path / f"{op}.yaml"
    spec.write_text(text.replace(wrong, right))
    res = run("try", spec)
    assert res.exit_code == 1, res.output
    assert "  FAIL " in res.output and res.output.strip().split("\n")[-1].startswith("FAILED: ")


def test_a_body_that_needs_threads_together_is_refused(run, tmp_path: Path):
    text = (SPECS / "_pdist_forward.yaml").read_text().replace(
        "  float agg = 0.0f;\n", "  float agg = 0.0f;\n  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
    )
    spec = tmp_path / "_pdist_forward.yaml"
    spec.write_text(text)
    res = run("try", spec)
    assert res.exit_code == 2, res.output
    line = next(i for i, ln in enumerate(text.split("\n"), 1) if "threadgroup_barrier" in ln)
    said = " ".join(res.output.split())
    assert "it uses `threadgroup_barrier`, but the body runs once per output element" in said and "Traceback" not in said
    assert f"{spec}:{line}:" in said  # (the spec's line with the barrier)


def test_the_shader_test_packs_params_as_c_lays_them_out(real_tree: Path, tmp_path: Path):
    """The generated test's pack_params against a C++ program printing the struct's layout
    (the struct as the header declares it, compiled with mpsgen's Metal model)."""
    from mpsgen.plan.kernel_companions import kernel_shader_test
    from mpsgen.shim.kernel_trial import driver_source
    from mpsgen.codegen.kernel import kernel_signature
    from mpsgen.plan.newkernel import choose_row
    from mpsgen.tree import PytorchTree
    from mpsgen.tree.native_yaml import read_native_functions

    tree = PytorchTree.locate(real_tree)
    spec = load_kernel_spec(SPECS / "_pdist_backward.yaml")
    _name, text = kernel_shader_test(tree, spec)
    namespace: dict = {}
    exec(compile(text.split("\nCASES = ")[0], "shader_test", "exec"), namespace)  # noqa: S102 (our own output)
    import torch

    tensors = [torch.zeros(10), torch.zeros(5, 3), torch.zeros(10)]
    packed = namespace["pack_params"](torch.zeros(5, 3), tensors, {"p": 1.5})

    _src, table = read_native_functions(tree)
    sig = kernel_signature(spec, choose_row(spec, table.of_op(spec.name)), "")
    source, _first, _last = driver_source(spec, sig)
    head = source[: source.index("\nstatic char** args;")]
    program = head + (
        "\n#include <cstddef>\nint main() {\n"
        f"  std::printf(\"%zu %zu %zu\\n\", sizeof({spec.params_struct}<>), offsetof({spec.params_struct}<>, p), "
        f"offsetof({spec.params_struct}<>, pdist_ndim));\n  return 0;\n}}\n"
    )
    (tmp_path / "metal_shim.h").write_text((resource_dir("templates") / "try" / "metal_shim.h").read_text())
    (tmp_path / "layout.cpp").write_text(program)
    cxx = next(shutil.which(c) for c in ("g++", "clang++", "c++") if shutil.which(c))
    subprocess.run([cxx, "-std=c++17", "-w", "-o", "layout", "layout.cpp"], cwd=tmp_path, check=True)
    size, p_at, ndim_at = map(int, subprocess.run([str(tmp_path / "layout")], capture_output=True, text=True, check=True).stdout.split())
    raw = bytes(packed.tolist())
    assert len(raw) == size
    import struct

    assert struct.unpack_from("@f", raw, p_at)[0] == 1.5
    assert struct.unpack_from("@i", raw, ndim_at)[0] == 1  # pdist is 1-D


def test_an_input_torch_cannot_compute_is_a_case_the_checks_must_refuse(run, tmp_path: Path):
    """try_inputs whose op raises for an input (here an output_size the forward refuses):
    the case is torch's refusal, judged against the spec's checks, never a traceback."""
    text = (SPECS / "adaptive_max_pool3d_backward.yaml").read_text().replace("args: [self, [2, 2, 2]]", "args: [self, [2, 2]]")
    spec = tmp_path / "adaptive_max_pool3d_backward.yaml"
    spec.write_text(text)
    res = run("try", spec, "--dtypes", "float")
    assert "Traceback" not in res.output and res.exit_code == 1, res.output
    assert "torch refuses it while computing try_inputs" in res.output


def test_a_try_inputs_argument_that_names_nothing_says_so(run, tmp_path: Path):
    text = (SPECS / "_pdist_backward.yaml").read_text().replace("args: [self, p]", "args: [self, q]")
    spec = tmp_path / "_pdist_backward.yaml"
    spec.write_text(text)
    res = run("try", spec)
    assert res.exit_code == 2, res.output
    assert "try_inputs: _pdist_forward's argument 'q' is neither a Tensor" in " ".join(res.output.split())
