"""`mpsgen new-op` end to end on practice trees holding the real torch 2.13 files."""

from __future__ import annotations

import difflib
import os
import re
import subprocess
from pathlib import Path

import pytest

from mpsgen.core.errors import Refused
from mpsgen.plan.newop import plan_new_op
from mpsgen.spec.op import FunctorSource, OpSpec
from mpsgen.tree import COMMON_METHODS, COMMON_MPS, NATIVE_FUNCTIONS, PytorchTree
from tests.conftest import git_init, shared_dispatch, snapshot, with_mps
from tests.releases import INSTALLED

BIN_METAL = "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
BIN_MM = "aten/src/ATen/native/mps/operations/BinaryKernel.mm"
UN_METAL = "aten/src/ATen/native/mps/kernels/UnaryKernel.metal"
UN_MM = "aten/src/ATen/native/mps/operations/UnaryKernel.mm"
SPECIAL = "torch/testing/_internal/opinfo/definitions/special.py"


def read(root: Path, rel: str) -> str:
    return (root / rel).read_text(encoding="utf-8")


def test_heaviside(real_tree: Path, real_sources, run):
    before = snapshot(real_tree)
    result = run("new-op", "heaviside", "--binary", "--integer", "--root", real_tree)
    assert result.exit_code == 0, result.output
    yaml_text = read(real_tree, NATIVE_FUNCTIONS)
    assert with_mps(real_sources, "heaviside_out") in yaml_text
    assert '"heaviside": None' not in read(real_tree, COMMON_MPS)
    cmi = read(real_tree, COMMON_METHODS)
    op = cmi[cmi.index("BinaryUfuncInfo('heaviside'") : cmi.index("BinaryUfuncInfo('lcm'")]
    ref = cmi[cmi.index('"_refs.heaviside"') : cmi.index('"_refs.hypot"')]
    assert "device_type='mps'" not in op + ref
    metal = read(real_tree, BIN_METAL)
    assert "struct heaviside_functor {" in metal
    assert "REGISTER_FLOAT_BINARY_OP(heaviside);\nREGISTER_INTEGER_BINARY_OP(heaviside);" in metal
    mm = read(real_tree, BIN_MM)
    assert "REGISTER_DISPATCH(heaviside_stub, &heaviside_mps_kernel)" in mm
    changed = {k for k, v in snapshot(real_tree).items() if before.get(k) != v}
    assert changed == {NATIVE_FUNCTIONS, COMMON_MPS, COMMON_METHODS, BIN_METAL, BIN_MM}


def test_special_ndtri(real_tree: Path, real_sources, run):
    result = run("new-op", "special_ndtri", "--unary", "--int2float", "--root", real_tree)
    assert result.exit_code == 0, result.output
    assert with_mps(real_sources, "special_ndtri_out") in read(real_tree, NATIVE_FUNCTIONS)
    assert '"special.ndtri"' not in read(real_tree, COMMON_MPS)
    special = read(real_tree, SPECIAL)
    entry = special[special.index('"special.ndtri",') : special.index('"special.log_ndtr",')]
    assert "device_type" not in entry
    assert "REGISTER_UNARY_OP(special_ndtri, DTYPE1, DTYPE0)" in read(real_tree, UN_METAL)
    assert "REGISTER_UNARY_TI_DISPATCH(special_ndtri);" in read(real_tree, UN_MM)


def test_atan2_on_a_tree_without_its_mps_row(real_tree: Path, run, release):
    yaml_path = real_tree / NATIVE_FUNCTIONS
    text = yaml_path.read_text()
    line = shared_dispatch(text, "atan2_out")
    yaml_path.write_text(text.replace(line, line.replace(", MPS", "")))
    result = run("new-op", "atan2", "--binary", "--int2float", "--root", real_tree)
    assert result.exit_code == 0, result.output
    if release == INSTALLED:
        assert yaml_path.read_text() == text  # back to exactly upstream's line
    else:  # 2.14.1 reads `CPU, CUDA, MPS, XPU: atan2_out` (XPU came after MPS); mpsgen appends MPS
        assert line == "    CPU, CUDA, MPS, XPU: atan2_out\n"
        assert yaml_path.read_text() == text.replace(line, "    CPU, CUDA, XPU, MPS: atan2_out\n")
    metal = read(real_tree, BIN_METAL)
    assert "REGISTER_FLOAT_BINARY_OP(atan2);\nREGISTER_INT2FLOAT_BINARY_OP(atan2);" in metal
    assert "::precise::atan2" in metal  # functor from the shipped specs/atan2.yaml


def test_atan2_already_on_metal_is_refused(real_tree: Path, run):
    before = snapshot(real_tree)
    result = run("new-op", "atan2", "--binary", "--int2float", "--root", real_tree)
    assert result.exit_code == 1
    assert "already on Metal" in result.stderr and "native_functions.yaml:" in result.stderr
    assert snapshot(real_tree) == before


def test_second_run_is_a_no_op(real_tree: Path, run):
    assert run("new-op", "heaviside", "--binary", "--integer", "--root", real_tree).exit_code == 0
    before = snapshot(real_tree)
    again = run("new-op", "heaviside", "--binary", "--integer", "--root", real_tree)
    assert again.exit_code == 0 and "nothing to do" in again.stderr
    strict = run("new-op", "heaviside", "--binary", "--integer", "--strict", "--root", real_tree)
    assert strict.exit_code == 1
    assert snapshot(real_tree) == before


def test_dry_run_prints_diff_and_writes_nothing(real_tree: Path, real_sources, run):
    before = snapshot(real_tree)
    result = run("new-op", "heaviside", "--binary", "--integer", "--dry-run", "--root", real_tree)
    assert result.exit_code == 0
    assert "+" + with_mps(real_sources, "heaviside_out") in result.stdout
    assert "diff --git a/aten/src/ATen/native/native_functions.yaml" in result.stdout
    assert snapshot(real_tree) == before


def test_patch_applies_and_reverses_with_git(real_tree: Path, real_sources, run, tmp_path: Path):
    git_init(real_tree)
    before = snapshot(real_tree)
    patch = tmp_path / "op.patch"
    result = run("new-op", "special_ndtri", "--unary", "--int2float", "--patch", patch, "--root", real_tree)
    assert result.exit_code == 0 and patch.is_file()
    assert snapshot(real_tree) == before
    subprocess.run(["git", "-C", real_tree, "apply", "--check", patch], check=True)
    subprocess.run(["git", "-C", real_tree, "apply", patch], check=True)
    assert with_mps(real_sources, "special_ndtri_out") in read(real_tree, NATIVE_FUNCTIONS)
    subprocess.run(["git", "-C", real_tree, "apply", "-R", patch], check=True)
    assert snapshot(real_tree) == before


def test_scaffold_and_undeclared_stub_refuse_unless_forced(real_tree: Path, run, without_shipped_spec):
    """A result that would not build (scaffold functor) or link (undeclared stub) exits 1 and
    writes nothing; --force writes it and still prints the problems."""
    before = snapshot(real_tree)
    # an op with no shipped spec (its functor would be a scaffold)
    without_shipped_spec("special_legendre_polynomial_p")
    args = ("new-op", "special_legendre_polynomial_p", "--binary", "--stub", "no_such_stub", "--root", real_tree)
    result = run(*args)
    assert result.exit_code == 1, result.output
    assert "scaffold" in result.stderr and "no DECLARE_DISPATCH(..., no_such_stub)" in result.stderr
    assert "nothing written" in result.stderr and "--force" in result.stderr
    assert snapshot(real_tree) == before
    forced = run(*args, "--force")
    assert forced.exit_code == 0, forced.output
    assert "scaffold" in forced.stderr and "no DECLARE_DISPATCH(..., no_such_stub)" in forced.stderr
    metal = read(real_tree, BIN_METAL)
    assert "struct special_legendre_polynomial_p_functor" in metal and "static_assert(" in metal


def test_declared_stub_gives_no_problem(real_tree: Path, run):
    result = run("new-op", "heaviside", "--binary", "--integer", "--root", real_tree)
    assert result.exit_code == 0, result.output
    assert "error" not in result.stderr and "problem" not in result.stderr
    assert "heaviside_out (aten/src/ATen/native/BinaryOps.cpp:" in result.stderr  # read from its definition


# -- bad input: message, exit code, nothing written ---------------------------------------------


@pytest.mark.parametrize(
    "args, code, needle",
    [
        (["heaviside", "--unary", "--binary"], 2, "mutually exclusive"),
        (["clamp"], 1, "takes 1 tensor and 2 scalars, which fits no kind"),  # the kind is read from the schema (Scalar? min, max)
        (["frexp"], 1, "returns 2 tensors"),
        (["heaviside", "--unary", "--expr", "x"], 1, "--unary says heaviside is `unary`, but its schema says `binary`"),
        (["heaviside", "--unary"], 2, "--unary contradicts specs/heaviside.yaml (the spec mpsgen ships for heaviside): its kind is binary"),
        (["heaviside", "--binary", "--complex"], 2, "--complex contradicts specs/heaviside.yaml (the spec mpsgen ships for heaviside): it registers dtypes float, integer"),
        (["heaviside", "--kind", "other"], 2, "--kind other: not a kind mpsgen writes"),
        (["acossh"], 1, "Did you mean acosh"),
        (["heavi;side", "--binary"], 2, "not a C identifier"),
        (["heavi)side", "--binary"], 2, "not a C identifier"),
        (['heavi"side', "--binary"], 2, "not a C identifier"),
        (["heavi\nside", "--binary"], 2, "not a C identifier"),
        (["heaviside", "--binary", "--int2float", "--integer"], 2, "pick one"),
        (["heaviside", "--unary", "--opmath", "--expr", "x"], 2, "opmath"),
        (["no_such_op_at_all", "--binary"], 1, "is not in aten/src/ATen/native/native_functions.yaml"),
        (["heaviside", "--binary", "--row", "heaviside.Scalar"], 1, "not a row of heaviside"),
        (["frac", "--unary"], 1, "migrate-from-mpsgraph"),  # MPSGraph code in both releases
        (["heaviside", "--binary", "--expr", "a", "--functor-file", "f"], 2, "mutually exclusive"),
        (["heaviside", "--binary", "--dry-run", "--patch", "p"], 2, "mutually exclusive"),
    ],
)
def test_bad_input(real_tree: Path, run, args, code, needle):
    before = snapshot(real_tree)
    result = run("new-op", *args, "--root", real_tree)
    assert result.exit_code == code, result.output
    assert needle in result.stderr
    assert "Traceback" not in result.output
    assert snapshot(real_tree) == before


def test_spec_with_unknown_dtype_and_outside_path(real_tree: Path, run, tmp_path: Path):
    spec = tmp_path / "heaviside.yaml"
    spec.write_text("name: heaviside\nkind: binary\ndtypes: [float, quad]\nfiles:\n  metal: ../../etc/x.metal\n")
    before = snapshot(real_tree)
    result = run("new-op", "heaviside", "--spec", spec, "--root", real_tree)
    assert result.exit_code == 2
    assert f"{spec}:3:17: unknown dtype group 'quad'" in result.stderr
    assert f"{spec}:5:10: files.metal:" in result.stderr and "outside the PyTorch tree" in result.stderr
    assert snapshot(real_tree) == before


def test_not_a_pytorch_tree(tmp_path: Path, run):
    result = run("new-op", "heaviside", "--binary", "--root", tmp_path)
    assert result.exit_code == 2 and "is not a PyTorch source tree" in result.stderr


def test_missing_target_file(real_tree: Path, run):
    (real_tree / BIN_MM).unlink()
    before = snapshot(real_tree)
    result = run("new-op", "heaviside", "--binary", "--integer", "--root", real_tree)
    assert result.exit_code == 2 and f"{BIN_MM} does not exist" in result.stderr
    assert snapshot(real_tree) == before


def test_non_utf8_target(real_tree: Path, run):
    path = real_tree / BIN_METAL
    path.write_bytes(path.read_bytes() + b"// caf\xe9\n")
    before = snapshot(real_tree)
    result = run("new-op", "heaviside", "--binary", "--integer", "--root", real_tree)
    assert result.exit_code == 2 and "not valid UTF-8" in result.stderr and BIN_METAL in result.stderr
    assert snapshot(real_tree) == before


def test_read_only_target_writes_no_file(real_tree: Path, run):
    path = real_tree / BIN_MM
    path.chmod(0o444)
    before = snapshot(real_tree)
    result = run("new-op", "heaviside", "--binary", "--integer", "--root", real_tree)
    assert result.exit_code == 2 and "read-only" in result.stderr and BIN_MM in result.stderr
    assert snapshot(real_tree) == before


def test_file_changed_since_plan_is_refused(real_tree: Path):
    tree = PytorchTree(real_tree)
    changeset = plan_new_op(tree, OpSpec("heaviside", "binary", FunctorSource(expr="a"), ("integer",)))
    (real_tree / BIN_METAL).write_text(read(real_tree, BIN_METAL) + "// edited meanwhile\n")
    before = snapshot(real_tree)
    with pytest.raises(Refused, match="changed since mpsgen read it"):
        changeset.apply()
    assert snapshot(real_tree) == before


def test_failure_mid_apply_rolls_back(real_tree: Path, monkeypatch):
    tree = PytorchTree(real_tree)
    changeset = plan_new_op(tree, OpSpec("heaviside", "binary", FunctorSource(expr="a"), ("integer",)))
    before = snapshot(real_tree)
    real_replace = os.replace
    calls = {"n": 0}

    def flaky(src, dst):
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(28, "No space left on device", str(dst))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", flaky)
    with pytest.raises(Refused, match="restored"):
        changeset.apply()
    assert snapshot(real_tree) == before
    assert not list(real_tree.rglob("*.mpsgen"))


def test_crlf_files_keep_crlf(real_tree: Path, run):
    path = real_tree / BIN_MM
    original = path.read_bytes().replace(b"\n", b"\r\n")
    path.write_bytes(original)
    assert run("new-op", "heaviside", "--binary", "--integer", "--root", real_tree).exit_code == 0
    data = path.read_bytes()
    assert data.count(b"\n") == data.count(b"\r\n")
    assert b"REGISTER_DISPATCH(heaviside_stub, &heaviside_mps_kernel)\r\n" in data
    new_lines = iter(data.split(b"\r\n"))
    assert all(line in new_lines for line in original.split(b"\r\n"))  # every old line, in order


def test_root_defaults_to_nearest_ancestor(real_tree: Path, run, monkeypatch):
    monkeypatch.chdir(real_tree / "aten/src/ATen/native/mps")
    result = run("new-op", "heaviside", "--binary", "--integer", "--dry-run")
    assert result.exit_code == 0 and "heaviside_out" in result.stdout


def test_no_tree_found_from_cwd(tmp_path: Path, run, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run("new-op", "heaviside", "--binary")
    assert result.exit_code == 2 and "not inside a PyTorch source tree" in result.stderr


def test_demo_runs(run, tmp_path: Path):
    result = run("demo")
    assert result.exit_code == 0, result.output
    assert "+    CPU, CUDA, MPS: heaviside_out" in result.stdout
    err = result.stderr
    assert "real native_functions.yaml" in err
    # the temporary tree is never named (it is gone when the demo ends); it says so
    assert "mpsgen-demo-" not in err and "--root" not in err
    assert "a temporary folder (removed when the demo ends)" in err and err.rstrip().endswith("keeps one to try the commands in.")
    # what would change: a list, a file a line
    listed = err[err.index("5 file(s) would change (nothing written):\n") :].splitlines()[1:]
    assert listed[0] == f"  {NATIVE_FUNCTIONS}: MPS joins the shared kernel line of heaviside.out"
    assert any(line.startswith(f"  {COMMON_MPS}: removed xfail/skip entries for heaviside") for line in listed)
    kept = run("demo", "--keep", tmp_path / "kept")
    assert kept.exit_code == 0 and f"the practice tree stays in {tmp_path / 'kept'}:" in kept.stderr
    assert f"cd {tmp_path / 'kept'} && mpsgen new-op heaviside --spec specs/heaviside.yaml" in kept.stderr


def test_functor_file_and_spec_flags(real_tree: Path, run, tmp_path: Path):
    body = tmp_path / "functor.metal"
    body.write_text("template <typename T>\ninline T operator()(const T a, const T b) {\n  return a > T(0) ? T(1) : (a < T(0) ? T(0) : b);\n}\n")
    result = run("new-op", "heaviside", "--binary", "--integer", "--functor-file", body, "--root", real_tree)
    assert result.exit_code == 0, result.output
    metal = read(real_tree, BIN_METAL)
    assert "struct heaviside_functor {\n  template <typename T>\n  inline T operator()(const T a, const T b) {\n    return a > T(0)" in metal


def test_spec_flag_drives_everything(real_tree: Path, run, tmp_path: Path):
    spec = tmp_path / "s.yaml"
    spec.write_text("name: heaviside\nkind: binary\ndtypes: [integer]\nrows: [heaviside.out]\nexpr: \"a\"\n")
    result = run("new-op", "heaviside", "--spec", spec, "--root", real_tree)
    assert result.exit_code == 0, result.output
    assert "return static_cast<T>(a);" in read(real_tree, BIN_METAL)
    wrong = run("new-op", "atan2", "--spec", spec, "--root", real_tree)
    assert wrong.exit_code == 2 and "describes 'heaviside', not 'atan2'" in wrong.stderr


def test_demo_without_torch_uses_own_sample_files(run, monkeypatch):
    import mpsgen.report.practice

    monkeypatch.setattr(mpsgen.report.practice, "real_file_sources", lambda: None)
    result = run("demo")
    assert result.exit_code == 0, result.output
    assert "mpsgen's own sample files only" in result.stderr
    assert "+    CPU, CUDA, MPS: heaviside_out" in result.stdout


def test_complex_op_is_marked_complex_supported(real_tree: Path, run):
    # (heaviside's own functor compares with T(0), which a float2 cannot: the compile gate refuses it)
    result = run("new-op", "heaviside", "--binary", "--integer", "--complex", "--expr", "a + b", "--root", real_tree)
    assert result.exit_code == 0, result.output
    common = read(real_tree, COMMON_MPS)
    start = common.index("SUPPORTED_COMPLEX_OPS = {")
    assert '"heaviside",' in common[start : common.index("}", start)]
    assert "REGISTER_BINARY_OP(heaviside, float2, float2);" in read(real_tree, BIN_METAL)


# -- fidelity on the real 2.13 files (issue: read what the tree really does) ------------------


def test_laguerre_registers_the_declared_stub(real_tree: Path, run):
    res = run("new-op", "special_laguerre_polynomial_l", "--binary", "--expr", "a + b", "--dry-run", "--root", real_tree)
    assert res.exit_code == 0, res.output
    assert "REGISTER_DISPATCH(laguerre_polynomial_l_stub, &special_laguerre_polynomial_l_mps_kernel)" in res.output
    assert "special_laguerre_polynomial_l_stub" not in res.output


def test_legendre_by_name_rule_when_no_cpp_defines_it(real_tree: Path, run):
    (real_tree / "aten/src/ATen/native/BinaryOps.cpp").unlink()
    args = ("new-op", "special_legendre_polynomial_p", "--binary", "--expr", "a + b", "--dry-run", "--root", real_tree)
    res = run(*args)  # a stub chosen by its name alone blocks the write until --stub names it
    assert res.exit_code == 1, res.output
    assert "error: dispatch stub legendre_polynomial_p_stub is chosen by its name alone (name without python_module prefix)" in res.output
    assert "--stub legendre_polynomial_p_stub" in res.output
    res = run(*args, "--stub", "legendre_polynomial_p_stub")
    assert res.exit_code == 0, res.output
    assert "chosen by its name alone" not in res.output
    assert "REGISTER_DISPATCH(legendre_polynomial_p_stub," in res.output


@pytest.mark.parametrize(
    "args, words",
    [
        (["frexp", "--unary", "--expr", "x"], ["frexp.Tensor_out", "returns 2 tensors"]),
        (["heaviside", "--unary", "--expr", "x"], ["heaviside.out", "takes 2 tensors", "--unary says", "schema says `binary`"]),
        (["special_xlog1py", "--unary", "--expr", "x"], ["special_xlog1py.out", "schema says `binary`", "give --binary"]),
    ],
)
def test_schema_mismatch_is_refused(real_tree: Path, run, args, words):
    before = snapshot(real_tree)
    res = run("new-op", *args, "--root", real_tree)
    assert res.exit_code == 1, res.output
    for w in words:
        assert w in res.output
    assert snapshot(real_tree) == before


def test_composite_op_is_refused(real_tree: Path, run):
    res = run("new-op", "square", "--unary", "--expr", "x * x", "--root", real_tree)
    assert res.exit_code == 1 and "composite" in res.output


def test_special_ndtri_includes_the_header_declaring_erfinv(real_tree: Path, run):
    res = run("new-op", "special_ndtri", "--unary", "--int2float", "--root", real_tree)  # shipped spec
    assert res.exit_code == 0, res.output
    metal = read(real_tree, UN_METAL)
    assert "#include <c10/metal/special_math.h>\n" in metal and "c10::metal::erfinv" in metal and "c10::metal::erfcx" in metal
    assert metal.index("#include <c10/metal/indexing.h>") < metal.index("#include <c10/metal/special_math.h>") < metal.index("#include <c10/metal/utils.h>")


def test_unknown_c10_metal_function_is_a_blocker(real_tree: Path, run):
    before = snapshot(real_tree)
    res = run("new-op", "special_ndtri", "--unary", "--expr", "::c10::metal::no_such_fn(x)", "--root", real_tree)
    assert res.exit_code == 1 and "c10::metal::no_such_fn" in res.output and "would not compile" in res.output
    assert snapshot(real_tree) == before


def test_alpha_type_needs_a_library_that_takes_it(real_tree: Path):
    from mpsgen.plan.newop import host_form_problems

    assert host_form_problems(PytorchTree(real_tree), "unary") == []  # 2.13 takes scalar_arg_type
    for rel in ("aten/src/ATen/native/mps/MetalShaderLibrary.h", "aten/src/ATen/native/mps/OperationUtils.h"):
        (real_tree / rel).write_text(
            "struct L {\n  void exec_unary_kernel(TensorIteratorBase& iter, const std::string& name, "
            "const std::optional<c10::Scalar> alpha);\n};\n"
        )
    problems = host_form_problems(PytorchTree(real_tree), "unary")
    assert problems and "takes no ScalarType" in problems[0]


# tests the OpInfo tests are instantiated from whose names lie close to those a change un-xfails
_NEIGHBOURS = (
    "test_output_match", "test_output_grad_match", "test_out", "test_out_warning", "test_dtypes",
    "test_noncontiguous_samples", "test_variant_consistency_eager", "test_python_ref", "test_python_ref_torch_fallback",
    "test_python_ref_executor", "test_python_ref_meta", "test_compare_cpu", "test_errors", "test_numpy_ref_mps",
)
_CLASSES = {"test_output_match": "TestConsistency", "test_output_grad_match": "TestConsistency", "test_numpy_ref_mps": "TestCommon"}


def real_test_names(root: Path) -> set[tuple[str, str, str]]:
    """(class, test, instantiated name) of the MPS tests torch would make of every OpInfo of
    the tree's OpInfo files (its formatted_name: name and variant, dots made underscores),
    for each test of _NEIGHBOURS, without a dtype and with a few."""
    from mpsgen.tree.opinfo import _entry, headers

    names = set()
    for rel in PytorchTree(root).opinfo_files():
        text = (root / rel).read_text(encoding="utf-8")
        for h in headers(text):
            e = _entry(rel, text, h)
            if e is not None:
                names.add(f"{e.name}.{e.variant}".replace(".", "_") if e.variant else e.name.replace(".", "_"))
    return {
        (_CLASSES.get(test, "TestCommon"), test, f"{test}_{name}_mps{suffix}")
        for name in names for test in _NEIGHBOURS for suffix in ("", "_float32", "_float16", "_int64", "_bool", "_complex64")
    }


def selected(expression: str, tests: set[tuple[str, str, str]]) -> set[str]:
    """The names pytest's -k ``expression`` selects (a word matches a substring of the test's
    name, its class's or its module's, ignoring case), by pytest's own expression evaluator."""
    from _pytest.mark.expression import Expression

    compiled = Expression.compile(expression)
    out = set()
    for cls, _test, name in tests:
        words = (name.lower(), f"{cls}MPS".lower(), "test_mps.py" if cls == "TestConsistency" else "test_ops.py")
        if compiled.evaluate(lambda word, **_kw: any(word.lower() in w for w in words)):
            out.add(name)
    return out


def test_next_steps_run_exactly_the_tests_the_change_un_xfails(real_tree, run):
    """One pytest command, checked against the names torch gives the tests of every OpInfo of
    the release: it selects the tests whose MPS xfail the change removes (common_mps.py's entry:
    TestConsistency.test_output_match; the DecorateInfos of heaviside and _refs.heaviside) for
    every dtype, and no other test (test_out_warning is not test_out, _refs.heaviside's test_out
    is not heaviside's)."""
    universe = real_test_names(real_tree)
    text = (real_tree / COMMON_METHODS).read_text(encoding="utf-8")
    res = run("new-op", "heaviside", "--binary", "--integer", "--root", real_tree)
    assert res.exit_code == 0, res.output
    err = res.stderr
    assert "next steps:" in err and "python -m pip install --no-build-isolation -v -e ." in err
    assert "--with-test" in err and "--pr-description" in err  # the hints
    [command] = [line.strip()[len("test:") :].strip() for line in err.splitlines() if line.strip().startswith("test:")]
    m = re.fullmatch(r'python -m pytest test/test_mps\.py test/test_ops\.py -v -k "([^"]+)"', command)
    assert m, command
    # what the change un-xfailed, read from the lines it removed: (test, the OpInfo they sat in)
    after = (real_tree / COMMON_METHODS).read_text(encoding="utf-8")
    before_lines, after_lines = text.split("\n"), after.split("\n")
    removed = set()
    for tag, i1, i2, _j1, _j2 in difflib.SequenceMatcher(None, before_lines, after_lines, autojunk=False).get_opcodes():
        for i in range(i1, i2) if tag in ("delete", "replace") else ():
            d = re.search(r"DecorateInfo\(unittest\.expectedFailure, 'TestCommon', '(\w+)', device_type='mps'\)", before_lines[i])
            if d:
                offset = len("\n".join(before_lines[:i]))
                *_, header = re.finditer(r"\w*Info\(\s*(['\"])([\w.]+)\1", text[:offset])
                removed.add((d.group(1), header.group(2).replace(".", "_")))
    assert {op for _t, op in removed} == {"heaviside", "_refs_heaviside"}, removed
    expected = {name for _c, test, name in universe if name.startswith("test_output_match_heaviside_mps")}
    expected |= {name for _c, test, name in universe for t, op in removed if name.startswith(f"{t}_{op}_mps")}
    got = selected(m.group(1), universe)
    assert got == expected, (sorted(got - expected)[:5], sorted(expected - got)[:5])
    assert any(n.startswith("test_out_warning_heaviside") for _c, _t, n in universe) and not any(n.startswith("test_out__refs_heaviside") for n in got)
    assert "un-xfails on MPS: TestConsistency.test_output_match, TestCommon." in err


def test_next_steps_of_a_change_that_un_xfails_nothing_run_its_consistency_tests(real_tree, run):
    res = run("migrate-from-mpsgraph", "frac", "--dry-run", "--root", real_tree)
    assert res.exit_code == 0, res.output
    [command] = [line.strip() for line in res.stderr.splitlines() if line.strip().startswith("test:")]
    m = re.search(r'-k "([^"]+)"', command)
    universe = real_test_names(real_tree)
    assert selected(m.group(1), universe) == {n for _c, t, n in universe if t == "test_output_match" and n.startswith("test_output_match_frac_mps")}


def test_dtypes_the_opinfo_does_not_test_are_named(real_tree: Path, run):
    """special_ndtri's kernel registers half and bfloat (float group), which its OpInfo
    (dtypes=all_types_and(torch.bool), no dtypesIfMPS) does not test on MPS: said, not hidden."""
    res = run("new-op", "special_ndtri", "--dry-run", "--root", real_tree)
    assert res.exit_code == 0, res.output
    assert "registers torch.float16, torch.bfloat16, which the OpInfo of special.ndtri does not test on MPS" in res.stderr
    heaviside = run("new-op", "heaviside", "--dry-run", "--root", real_tree)
    assert "does not test on MPS" not in heaviside.stderr  # its OpInfo tests every dtype it gets


def test_new_op_on_an_op_half_on_mpsgraph_names_the_migration(real_tree: Path, run):
    """logit: logit and logit.out run their own MPS kernels (MPSGraph code); new-op would give
    MPS to logit_ only. It refuses, naming the migration; --partial goes on and says what stays."""
    before = snapshot(real_tree)
    res = run("new-op", "logit", "--dry-run", "--root", real_tree)
    assert res.exit_code == 1
    assert "logit.out (MPS: logit_out_mps)" in res.stderr and "`mpsgen migrate-from-mpsgraph logit`" in res.stderr
    assert "--partial" in res.stderr
    res = run("new-op", "logit", "--partial", "--stub", "logit_stub", "--dry-run", "--root", real_tree)
    assert res.exit_code == 0, res.output
    assert "left logit.out on its own MPS kernel logit_out_mps (--partial)" in res.stderr
    assert re.search(r"^\+    CPU, CUDA\b[\w, ]*\bMPS\b[\w, ]*: logit_$", res.stdout, re.M)  # (where MPS goes on the line aside)
    assert snapshot(real_tree) == before


def test_kind_and_dtypes_come_from_the_tree(real_tree: Path, run, without_shipped_spec):
    without_shipped_spec("heaviside")
    res = run("new-op", "heaviside", "--expr", "a == T(0) ? b : static_cast<T>(a > T(0))", "--dry-run", "--root", real_tree)
    assert res.exit_code == 0, res.output
    assert "kind binary (--binary): read from the rows' schema" in res.stderr
    assert "dtypes float, integer: what the OpInfo of heaviside tests on MPS" in res.stderr
    assert "+REGISTER_INTEGER_BINARY_OP(heaviside);" in res.stdout
    # a dtype flag says the dtypes itself
    res = run("new-op", "heaviside", "--int2float", "--expr", "a + b", "--dry-run", "--root", real_tree)
    assert res.exit_code == 0, res.output
    assert "+REGISTER_INT2FLOAT_BINARY_OP(heaviside);" in res.stdout and "what the OpInfo" not in res.stderr


def test_a_bool_output_is_read_from_the_cpu_kernel(real_tree: Path):
    from mpsgen.tree.op_facts import kind_and_dtypes_from_tree
    from mpsgen.tree import PytorchTree

    # signbit_out builds a unary_force_boolean_op (the practice UnaryOps.cpp): bool_out
    kind, groups, _how = kind_and_dtypes_from_tree(PytorchTree(real_tree), "signbit", migrate=True)
    assert kind == "unary" and groups == ("float", "integer", "bool_out")
    # acosh's OpInfo says promotes_int_to_float; it tests complex64 on MPS
    assert kind_and_dtypes_from_tree(PytorchTree(real_tree), "acosh", migrate=True)[:2] == ("unary", ("float", "int2float", "complex"))


def test_a_row_named_twice_is_taken_once(real_tree: Path, real_sources, run):
    result = run("new-op", "heaviside", "--row", "heaviside.out", "--row", "heaviside.out", "--root", real_tree)
    assert result.exit_code == 0, result.output
    yaml_text = read(real_tree, NATIVE_FUNCTIONS)
    assert with_mps(real_sources, "heaviside_out") in yaml_text and "MPS, MPS" not in yaml_text


def test_a_duplicated_func_is_refused_naming_both_lines(real_tree: Path, run):
    path = real_tree / NATIVE_FUNCTIONS
    text = path.read_text()
    start = text.index("- func: heaviside.out(")
    entry = text[start : text.index("\n\n", start) + 2]
    path.write_text(text + "\n" + entry)
    before = snapshot(real_tree)
    result = run("new-op", "heaviside", "--root", real_tree)
    first = text[:start].count("\n") + 1
    assert result.exit_code == 2 and f"`- func: heaviside.out` is there twice (lines {first} and " in result.output, result.output
    assert snapshot(real_tree) == before


@pytest.mark.parametrize("content", ["", "// nothing here yet\n", "#include <c10/metal/indexing.h>\n"])
def test_a_kernel_file_with_nothing_to_place_a_kernel_by_is_refused(real_tree: Path, run, content: str):
    (real_tree / BIN_METAL).write_text(content)
    before = snapshot(real_tree)
    result = run("new-op", "heaviside", "--root", real_tree)
    assert result.exit_code == 1 and f"{BIN_METAL} has no " in result.output, result.output
    assert snapshot(real_tree) == before


@pytest.mark.parametrize(
    "form",
    [
        '        UNIMPLEMENTED_XFAILLIST["heaviside"] = None\n',
        '        UNIMPLEMENTED_XFAILLIST.update({"heaviside": None})\n',
        "        UNIMPLEMENTED_XFAILLIST.update(dict(heaviside=None))\n",
    ],
)
def test_an_xfail_mpsgen_cannot_edit_blocks_the_write(real_tree: Path, run, form: str):
    """An entry written another way than a dict literal's key would keep the tests xfailed:
    it is named, with its line, and the write is refused (never a silent partial edit)."""
    path = real_tree / COMMON_MPS
    text = path.read_text()
    anchor = "        UNIMPLEMENTED_XFAILLIST_SPARSE"
    assert text.count(anchor) == 1
    path.write_text(text.replace(anchor, form + anchor))
    line = path.read_text().split("\n").index(form.rstrip("\n")) + 1
    before = snapshot(real_tree)
    result = run("new-op", "heaviside", "--root", real_tree)
    assert result.exit_code == 1, result.output
    assert f"error: {COMMON_MPS}:{line}: `{form.strip()}` names heaviside's tests in a form mpsgen does not edit" in result.output
    assert snapshot(real_tree) == before


def test_explain_lists_an_xfail_mpsgen_cannot_edit(real_tree: Path, run):
    path = real_tree / COMMON_MPS
    anchor = "        UNIMPLEMENTED_XFAILLIST_SPARSE"
    path.write_text(path.read_text().replace(anchor, '        UNIMPLEMENTED_XFAILLIST["heaviside"] = None\n' + anchor))
    out = run("explain", "heaviside", "--root", real_tree).output
    assert "`UNIMPLEMENTED_XFAILLIST[\"heaviside\"] = None` (a form mpsgen does not edit)" in out, out
