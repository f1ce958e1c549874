"""new-kernel on the real files of both releases: the worked example (_pdist_forward, then
_pdist_backward, with the specs mpsgen ships) writes the params header, the kernel file, the
host file, both yaml rows' MPS lines, the AOTI shim and, once both ops are on MPS, the test
lists; check accepts the result; clang-format leaves it as it is; what cannot be written is
refused with its reason and nothing written."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mpsgen.check import run_check
from mpsgen.spec.kernel import parse_kernel_spec_text
from mpsgen.core.resources import resource_dir
from mpsgen.tree import NATIVE_FUNCTIONS, PytorchTree
from mpsgen.tree.aoti import C_SHIM_MPS
from tests.conftest import git_init, snapshot

KERNELS = "aten/src/ATen/native/mps/kernels"
OPS = "aten/src/ATen/native/mps/operations"
COMMON_MPS = "torch/testing/_internal/common_mps.py"
OPINFOS = "torch/testing/_internal/common_methods_invocations.py"
STYLE = Path(__file__).parents[1] / "clang-format.yaml"


def read(root: Path, rel: str) -> str:
    return (root / rel).read_text(encoding="utf-8")


def row_block(yaml: str, func: str) -> str:
    start = yaml.index(f"- func: {func}(")
    return yaml[start : yaml.index("\n\n", start)]


def test_the_pdist_pair_lands_in_two_steps(real_tree: Path, release: str, run):
    before = run_check(PytorchTree.locate(real_tree))
    other_device = "DecorateInfo(unittest.skip(\"Driver issue\"), 'TestCommon'," in read(real_tree, OPINFOS)  # (2.14.1)
    res = run("new-kernel", "_pdist_forward", "--root", real_tree)
    assert res.exit_code == 0, res.output
    # the forward alone: its tests also run _pdist_backward, so their xfails stay (and it says so)
    assert "kept: the MPS xfails of nn.functional.pdist stay" in res.output and "aten::_pdist_backward" in res.output
    assert '"nn.functional.pdist": None' in read(real_tree, COMMON_MPS)
    yaml = read(real_tree, NATIVE_FUNCTIONS)
    assert "\n    MPS: _pdist_forward_mps\n" in row_block(yaml, "_pdist_forward")
    assert "MPS" not in row_block(yaml, "_pdist_backward")
    shim = read(real_tree, C_SHIM_MPS)
    assert "aoti_torch_mps__pdist_forward(AtenTensorHandle self, double p, AtenTensorHandle* ret0)" in shim

    res = run("new-kernel", "_pdist_backward", "--root", real_tree)
    assert res.exit_code == 0, res.output
    assert "kept: the MPS xfails" not in res.output
    yaml = read(real_tree, NATIVE_FUNCTIONS)
    assert "\n    MPS: _pdist_backward_mps\n" in row_block(yaml, "_pdist_backward")
    assert '"nn.functional.pdist"' not in read(real_tree, COMMON_MPS)
    opinfos = read(real_tree, OPINFOS)
    # the OpInfo's blanket MPS xfail and its comment go; the _refs entry's stays, as its CPU run fails too
    entry = opinfos[opinfos.index('"nn.functional.pdist",') :]
    entry = entry[: entry.index("OpInfo(")]
    assert "device_type='mps'" not in entry
    assert opinfos.count("The operator 'aten::_pdist_forward' is not") == 1
    assert "'test_python_ref_torch_fallback', device_type='mps')" in opinfos
    assert "the CPU run of this test is expected to fail too" in " ".join(res.output.split())
    assert other_device == ("DecorateInfo(unittest.skip(\"Driver issue\"), 'TestCommon'," in opinfos)  # it stays
    assert "aoti_torch_mps__pdist_backward(" in read(real_tree, C_SHIM_MPS)

    header, metal, mm = (read(real_tree, f"{KERNELS}/Distance.h"), read(real_tree, f"{KERNELS}/Distance.metal"),
                         read(real_tree, f"{OPS}/Distance.mm"))
    assert "struct CdistBwdParams" in header  # what the release's header had stays
    assert "struct PdistForwardParams {" in header and "struct PdistBackwardParams {" in header
    assert header.index("#include <c10/metal/common.h>") > header.index("#pragma once")
    for kernel in ("pdist_forward", "pdist_backward"):
        assert f"REGISTER_{kernel.upper()}_OP(float);" in metal and "_OP(half)" not in metal  # (the OpInfo's MPS dtypes)
        assert f'template [[host_name("{kernel}_" #DTYPE)]] kernel void' in metal
        assert f'lib.getPipelineStateForFunc(fmt::format("{kernel}_{{}}", scalarToMetalTypeString(output)))' in mm
    # joined to the tree's Distance.metal (cdist's): the include opmath_t needs added, its own
    # `using namespace` lines left as they are (the body was compiled under them)
    assert metal.startswith("#include <ATen/native/mps/kernels/Distance.h>\n")
    assert "#include <c10/metal/utils.h>\n" in metal and "using namespace c10::metal;" not in metal
    assert "inline c10::metal::opmath_t<T> pdist_forward_element(" in metal and "kernel void cdist_backward(" in metal
    assert mm.count("static auto& lib = mps::MetalShaderLibrary::getBundledLibrary();") == 1
    assert "#include <ATen/native/mps/Distance_metallib.h>" in mm
    for include in ("_pdist_backward_native", "_pdist_forward_native", "empty", "empty_like"):
        assert f"#include <ATen/ops/{include}.h>" in mm
    grad = "grad_output" if release == "2.14.1" else "grad"  # the release's name of the argument
    assert f"Tensor _pdist_backward_mps(const Tensor& {grad}, const Tensor& self, double p, const Tensor& pdist) {{" in mm
    assert f"mps::pdist_backward_kernel(output, {grad}, self, pdist, p);" in mm
    for piece in ("dispatch_sync_with_rethrow(mpsStream->queue(), ^() {", "@autoreleasepool {",
                  "getMPSProfiler().beginProfileKernel(pso, \"pdist_forward\", {self});",
                  "mtl_setArgs(computeEncoder, output, self, params);", "mtl_dispatch1DJob(computeEncoder, pso, output.numel());",
                  "getMPSProfiler().endProfileKernel(pso);", "if (output.numel() == 0) {\n    return output;\n  }",
                  "canUse32BitIndexMath(output) && canUse32BitIndexMath(self)"):
        assert piece in mm, piece

    after = run_check(PytorchTree.locate(real_tree))
    said_before = {(f.code, f.message) for f in before.findings}  # (yaml lines moved: by what they say)
    assert [f for f in after.findings if (f.code, f.message) not in said_before] == []


def clang_formatted(text: str, name: str, tmp_path: Path) -> str:
    exe = shutil.which("clang-format")
    if exe is None:
        pytest.fail("clang-format must be installed for the tests (pip install -e '.[test]')")
    work = tmp_path / "fmt"
    work.mkdir(exist_ok=True)
    (work / ".clang-format").write_text(STYLE.read_text())
    (work / name).write_text(text)
    return subprocess.run([exe, name], cwd=work, capture_output=True, text=True, check=True).stdout


def test_what_new_kernel_writes_is_clang_format_clean(real_tree: Path, run, tmp_path: Path):
    original_header = read(real_tree, f"{KERNELS}/Distance.h")
    for op in ("_pdist_forward", "_pdist_backward", "adaptive_max_pool3d_backward"):
        assert run("new-kernel", op, "--root", real_tree).exit_code == 0
    for rel in (f"{OPS}/Distance.mm", f"{KERNELS}/Distance.metal", f"{OPS}/AdaptiveMaxPool3d.mm",
                f"{KERNELS}/AdaptiveMaxPool3d.metal", f"{KERNELS}/AdaptiveMaxPool3d.h"):
        text = read(real_tree, rel)
        assert clang_formatted(text, rel.rpartition("/")[2], tmp_path) == text, rel
    # the header: what mpsgen added is formatted (the release's own lines are left as they are)
    header = read(real_tree, f"{KERNELS}/Distance.h")
    formatted = clang_formatted(header, "Distance.h", tmp_path)
    added = [ln for ln in header.split("\n") if ln not in original_header.split("\n")]
    assert added and all(ln in formatted.split("\n") for ln in added)


def test_a_dry_run_and_a_patch_write_nothing(real_tree: Path, run, tmp_path: Path):
    git_init(real_tree)
    before = snapshot(real_tree)
    res = run("new-kernel", "_pdist_forward", "--root", real_tree, "--dry-run")
    assert res.exit_code == 0, res.output
    assert "+++ b/aten/src/ATen/native/mps/kernels/Distance.metal" in res.output
    assert "new file mode 100644" not in res.output  # (the tree's Distance files, cdist's, are joined)
    patch = tmp_path / "pdist.patch"
    assert run("new-kernel", "_pdist_forward", "--root", real_tree, "--patch", patch).exit_code == 0
    assert snapshot(real_tree) == before
    subprocess.run(["git", "-C", str(real_tree), "apply", str(patch)], check=True)
    assert "MPS: _pdist_forward_mps" in read(real_tree, NATIVE_FUNCTIONS)
    assert (real_tree / KERNELS / "Distance.metal").is_file()


def write_spec(tmp_path: Path, text: str, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


SHIPPED = (resource_dir("specs") / "kernels" / "_pdist_forward.yaml").read_text()


@pytest.mark.parametrize(
    "args,code,said",
    [
        (["new-kernel", "no_such_op_xyz", "--spec", "{spec:no_such_op_xyz}"], 2, "has no op 'no_such_op_xyz'"),
        (["new-kernel", "_cdist_backward", "--spec", "{spec:_cdist_backward}"], 1, "already dispatches MPS"),
        (["new-kernel", "heaviside", "--spec", "{spec:heaviside}"], 1, "tagged pointwise: an elementwise op"),
        (["new-kernel", "_spdiags", "--spec", "{spec:_spdiags}"], 1, "argument `int[] shape` is not one new-kernel passes"),
        (["new-kernel", "fractional_max_pool3d", "--spec", "{spec:fractional_max_pool3d}"], 1, "has `precomputed:` arguments"),
        (["new-kernel", "_sparse_sum_backward", "--spec", "{spec:_sparse_sum_backward}"], 1, "no dense CPU or CUDA kernel"),
        (["new-kernel", "diag_embed", "--spec", "{spec:diag_embed}"], 1, "runs on MPS through the ops it calls"),
        (["new-kernel", "_pdist_forward", "--file", "distance"], 2, "--file 'distance'"),
        (["new-kernel", "_pdist_forward", "--dtypes", "float,double"], 2, "--dtypes 'float,double'"),
        (["new-kernel", "_pdist_backward", "--spec", "{shipped}"], 2, "the spec is for _pdist_forward, not _pdist_backward"),
        (["new-kernel", "index_select_backward"], 2, "ships no kernel spec for index_select_backward"),
        (["new-kernel", "../x"], 2, "OP"),
    ],
)
def test_what_new_kernel_refuses(real_tree: Path, run, tmp_path: Path, args, code, said):
    before = snapshot(real_tree)
    args = [a.replace("{shipped}", str(resource_dir("specs") / "kernels" / "_pdist_forward.yaml")) for a in args]
    for i, a in enumerate(args):
        if a.startswith("{spec:"):
            op = a[len("{spec:") : -1]
            args[i] = str(write_spec(tmp_path, SHIPPED.replace("name: _pdist_forward", f"name: {op}")))
    res = run(*args, "--root", real_tree)
    assert res.exit_code == code, res.output
    assert said in " ".join(res.output.split()), res.output
    assert "Traceback" not in res.output
    assert snapshot(real_tree) == before


def test_a_body_that_does_not_compile_is_refused_at_its_spec_line(real_tree: Path, run, tmp_path: Path):
    spec = write_spec(tmp_path, SHIPPED.replace("agg += diff * diff;", "agg += diff * dif;"))
    line = next(i for i, ln in enumerate(spec.read_text().split("\n"), 1) if "diff * dif;" in ln)
    before = snapshot(real_tree)
    res = run("new-kernel", "_pdist_forward", "--spec", spec, "--root", real_tree)
    assert res.exit_code == 1, res.output
    assert f"{spec}:{line}: the kernel body does not compile against mpsgen's Metal model" in " ".join(res.output.split())
    assert snapshot(real_tree) == before


@pytest.mark.parametrize(
    "change,said",
    [
        (("file: Distance", "file: distance/x"), "'file' is a file stem like Distance"),
        (("body: |", "bogus: 1\nbody: |"), "unknown key 'bogus'"),
        (("dtypes: [float]", "dtypes: [float, double]"), "unknown kernel dtype 'double'"),
        (("  return ::metal::pow(agg, 1.0f / p);", "  double d = 0;"), "Metal has no double"),
        (("  sizes: \"{self.size(0) * (self.size(0) - 1) / 2}\"", "  sizes: \"{self.size(0); exit(1)}\""), "output.sizes must be one C++ expression"),
        (("require: \"p >= 0\"", "require: \"p >= 0); system(x\""), "check must be one C++ expression"),
        (("require: \"p >= 0\"", "require: \"p >= 0) || (p\""), "check has an unbalanced bracket"),
        (("got: {self.dim()}D", "got: {self.dim()D"), "message has an unbalanced { or }"),
        (("try_params: [{p: 2.0}", "try_params: [{p: [1]}"), "each try_params entry maps arguments"),
    ],
)
def test_a_bad_kernel_spec_is_located(change, said):
    text = SHIPPED.replace(*change)
    assert text != SHIPPED
    spec, problems = parse_kernel_spec_text(text, "k.yaml")
    assert spec is None and problems
    shown = [f"{loc}: {msg}" for loc, msg in problems]
    assert any(said in s and re.match(r"k\.yaml:\d+(:\d+)?: ", s) for s in shown), shown


def test_a_second_run_is_refused_not_doubled(real_tree: Path, run):
    assert run("new-kernel", "_pdist_forward", "--root", real_tree).exit_code == 0
    before = snapshot(real_tree)
    res = run("new-kernel", "_pdist_forward", "--root", real_tree)
    assert res.exit_code == 1 and "already dispatches MPS (_pdist_forward_mps)" in res.output
    assert snapshot(real_tree) == before


def test_with_test_writes_a_shader_test_that_skips_without_mps(real_tree: Path, run, tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = run("new-kernel", "_pdist_backward", "--root", real_tree, "--with-test", "--dry-run")
    assert res.exit_code == 1 or "dry run: would write" in res.output  # (the forward is not on MPS yet: fine)
    assert run("new-kernel", "_pdist_forward", "--root", real_tree, "--with-test").exit_code == 0
    test = tmp_path / "test_pdist_forward_shader.py"
    text = test.read_text()
    assert "struct PdistForwardParams {" in text and "#include <ATen/native/mps/kernels/Distance.h>" not in text
    assert 'template [[host_name("pdist_forward_" #DTYPE)]] kernel void' in text
    proc = subprocess.run(["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)], capture_output=True, text=True)
    assert proc.returncode == 0 and "skipped" in proc.stdout, proc.stdout + proc.stderr


def test_the_pr_description_names_each_file_and_the_tests_it_unblocks(real_tree: Path, run):
    assert run("new-kernel", "_pdist_forward", "--root", real_tree).exit_code == 0
    res = run("new-kernel", "_pdist_backward", "--root", real_tree, "--pr-description", "--dry-run")
    assert res.exit_code == 0, res.output
    text = res.output[res.output.index("[MPS] Add Metal kernel for _pdist_backward") :]
    assert "- `aten/src/ATen/native/mps/kernels/Distance.metal`: the `pdist_backward` kernel" in text
    assert "`MPS: _pdist_backward_mps` on `_pdist_backward`" in text
    assert "No longer expected to fail on MPS: " in text and "`TestCommon (every test)`" in text
    assert '(TestCommonMPS and nn_functional_pdist_mps)' in text  # the whole class the OpInfo un-xfailed


def test_explain_names_new_kernel_for_an_op_with_a_kernel_spec(real_tree: Path, run):
    res = run("explain", "_pdist_forward", "--root", real_tree)
    assert res.exit_code == 0, res.output
    assert "spec: specs/kernels/_pdist_forward.yaml (a custom kernel: mpsgen new-kernel)" in res.output
    assert "next: ready: `mpsgen new-kernel _pdist_forward --dry-run`" in " ".join(res.output.split())
    assert run("new-kernel", "_pdist_forward", "--root", real_tree).exit_code == 0  # the named command runs
    res = run("explain", "_pdist_forward", "--root", real_tree)
    assert "runs on its own Metal kernel (_pdist_forward_mps in" in " ".join(res.output.split())


def test_a_structured_op_gets_its_torch_impl_func(real_tree: Path, run):
    """adaptive_max_pool3d_backward: its .grad_input row is structured (the functional row
    delegates to it); its indices are long whatever the kernel's dtype."""
    before = run_check(PytorchTree.locate(real_tree))
    res = run("new-kernel", "adaptive_max_pool3d_backward", "--root", real_tree)
    assert res.exit_code == 0, res.output
    yaml = read(real_tree, NATIVE_FUNCTIONS)
    assert row_block(yaml, "adaptive_max_pool3d_backward.grad_input").endswith("\n    MPS: adaptive_max_pool3d_backward_out_mps")
    assert "MPS" not in row_block(yaml, "adaptive_max_pool3d_backward")  # (the functional row delegates)
    mm = read(real_tree, f"{OPS}/AdaptiveMaxPool3d.mm")
    assert ("TORCH_IMPL_FUNC(adaptive_max_pool3d_backward_out_mps)\n(const Tensor& grad_output, const Tensor& self, "
            "const Tensor& indices, const Tensor& grad_input) {") in mm
    assert "if (grad_input.numel() == 0) {\n    return;\n  }" in mm
    assert "Tensor output = grad_input.is_contiguous() ? grad_input : at::empty_like(grad_input, MemoryFormat::Contiguous);" in mm
    assert "grad_input.copy_(output);" in mm and "mps::adaptive_max_pool3d_backward_kernel(output, grad_output, indices);" in mm
    assert "TORCH_CHECK(indices.scalar_type() == kLong," in mm
    metal = read(real_tree, f"{KERNELS}/AdaptiveMaxPool3d.metal")
    assert "    constant long* indices," in metal and "constant long* indices [[buffer(2)]]," in metal
    # the forward (two outputs, int[3]) is not on MPS: the OpInfo's xfails stay, and the next step says why
    assert '"nn.functional.adaptive_max_pool3d": None' in read(real_tree, COMMON_MPS)
    assert "then: adaptive_max_pool3d on MPS, by hand (adaptive_max_pool3d.out does not return one Tensor" in " ".join(res.output.split())
    assert "aoti_torch_mps_adaptive_max_pool3d_backward(" in read(real_tree, C_SHIM_MPS)
    after = run_check(PytorchTree.locate(real_tree))
    said_before = {(f.code, f.message) for f in before.findings}
    assert [f for f in after.findings if (f.code, f.message) not in said_before] == []


def test_the_shipped_kernel_specs_validate(run):
    specs = sorted((resource_dir("specs") / "kernels").glob("*.yaml"))
    assert len(specs) >= 3
    res = run("spec", "validate", *specs)
    assert res.exit_code == 0, res.output


def test_the_backward_first_keeps_the_xfails_its_forward_still_needs(real_tree: Path, run):
    res = run("new-kernel", "_pdist_backward", "--root", real_tree)
    assert res.exit_code == 0, res.output
    assert "aten::_pdist_forward" in res.output and "then: mpsgen new-kernel _pdist_forward;" in " ".join(res.output.split())
    assert '"nn.functional.pdist": None' in read(real_tree, COMMON_MPS)
    res = run("new-kernel", "_pdist_forward", "--root", real_tree)
    assert res.exit_code == 0, res.output
    assert '"nn.functional.pdist"' not in read(real_tree, COMMON_MPS)


def test_dtypes_the_opinfo_does_not_claim_block_the_un_xfail_of_test_dtypes(real_tree: Path, run):
    assert run("new-kernel", "_pdist_forward", "--root", real_tree).exit_code == 0
    before = snapshot(real_tree)
    res = run("new-kernel", "_pdist_backward", "--root", real_tree, "--dtypes", "float,half")
    assert res.exit_code == 1, res.output
    said = " ".join(res.output.split())
    assert "un-xfails TestCommon.test_dtypes of nn.functional.pdist on MPS" in said and "Give --dtypes float" in said
    assert snapshot(real_tree) == before


def test_a_body_is_compiled_under_the_using_lines_of_the_file_it_joins(real_tree: Path, run, tmp_path: Path):
    """The tree's Distance.metal opens `metal` only: a body naming c10::metal's opmath_t
    unqualified would not compile there, and is refused before anything is written."""
    assert "using namespace c10::metal;" not in read(real_tree, f"{KERNELS}/Distance.metal")
    spec = write_spec(tmp_path, SHIPPED.replace("  float agg = 0.0f;", "  opmath_t<T> agg = 0.0f;"))
    before = snapshot(real_tree)
    res = run("new-kernel", "_pdist_forward", "--spec", spec, "--root", real_tree)
    assert res.exit_code == 1, res.output
    assert "the kernel body does not compile against mpsgen's Metal model" in " ".join(res.output.split())
    assert snapshot(real_tree) == before


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_a_patch_never_replaces_a_link_or_a_special_file(real_tree: Path, run, tmp_path: Path, kind):
    import os

    target = tmp_path / "out.patch"
    kept = tmp_path / "kept.patch"
    kept.write_text("mine\n")
    if kind == "symlink":
        target.symlink_to(kept)
    else:
        os.mkfifo(target)
    before = snapshot(real_tree)
    res = run("new-kernel", "_pdist_forward", "--root", real_tree, "--patch", target, "--force")
    assert res.exit_code == 2, res.output
    assert "mpsgen writes a patch as a new regular file and will not replace it" in " ".join(res.output.split())
    assert (target.is_symlink() if kind == "symlink" else not target.is_file()) and kept.read_text() == "mine\n"
    assert snapshot(real_tree) == before


def test_the_pr_description_is_printed_after_the_change_is_applied(real_tree: Path, run, tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = run("new-kernel", "adaptive_max_pool3d_backward", "--root", real_tree, "--with-test", "--pr-description")
    assert res.exit_code == 0, res.output
    assert "error:" not in res.output
    assert "`MPS: adaptive_max_pool3d_backward_out_mps` on `adaptive_max_pool3d_backward.grad_input`" in res.output
    test = tmp_path / "test_adaptive_max_pool3d_backward_shader.py"
    assert "DERIVED = {'indices': ['adaptive_max_pool3d', ['self', [2, 2, 2]], 1]}" in test.read_text()
    proc = subprocess.run(["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)], capture_output=True, text=True)
    assert proc.returncode == 0 and "skipped" in proc.stdout, proc.stdout + proc.stderr


def test_explain_tells_an_op_on_its_own_kernel_without_a_shipped_spec(real_tree: Path, run, tmp_path: Path):
    spec = write_spec(tmp_path, "name: glu_jvp\nkind: kernel\nfile: GluJvp\noutput: {like: glu}\nbody: |\n  return 0;\n", "glu_jvp.yaml")
    res = run("new-kernel", "glu_jvp", "--spec", spec, "--root", real_tree)
    assert res.exit_code == 0, res.output
    res = run("explain", "glu_jvp", "--root", real_tree)
    said = " ".join(res.output.split())
    assert "next: nothing to add: glu_jvp runs on its own Metal kernel (glu_jvp_mps in aten/src/ATen/native/mps/operations/GluJvp.mm)" in said


def test_spec_validate_names_the_spec_once(run, tmp_path: Path):
    spec = write_spec(tmp_path, SHIPPED.replace("inputs: [self]", "inputs: [self, x]"))
    res = run("spec", "validate", spec)
    assert res.exit_code == 2
    said = " ".join(res.output.split())
    assert said.count(str(spec)) == 1 and "input 'x' is not a Tensor argument of _pdist_forward (self)" in said
