"""migrate-from-mpsgraph prod|var --with-test, --with-bench and --pr-description on practice
trees of both releases: golden files of all three; the Metal source the test embeds is the
text the change writes; the test collects and skips here, and its host emulation (params
packing, strides, threadgroups) is run through mpsgen's model of Metal in place of the GPU;
the benchmark runs on the CPU and prints its table; the PR text names the reviewers of the
tree's CODEOWNERS."""

from __future__ import annotations

import ast
import json
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from mpsgen.spec.reduction import load_reduction_spec, shipped_reduction_spec
from mpsgen.tree.codeowners import owners_of, read_rules
from tests.conftest import snapshot
from tests.golden import assert_golden

METAL = "aten/src/ATen/native/mps/kernels/ReduceOps.metal"
HEADER = "aten/src/ATen/native/mps/kernels/ReduceOps.h"
# the op migrated, its flags, the stub's kernel name
CASES = {"var": ((), "std_var"), "prod": (("--allow-dtype-loss",), "prod")}


def _dispatched(tree: Path, op: str) -> bool:
    """prod on a tree with a reduction dispatcher of its own (2.14.1's shape): the change gives
    the dispatcher's value kernels an op struct and writes no kernel of mpsgen's own to test."""
    return op == "prod" and "reduction_dispatch_mps" in (tree / "aten/src/ATen/native/mps/operations/ReduceOps.mm").read_text()


def _migrate(run, tree: Path, work: Path, op: str, *extra: str, with_test: bool = True):
    flags, _kernel = CASES[op]
    test = ("--with-test",) if with_test else ()
    return run("migrate-from-mpsgraph", op, *flags, *test, "--with-bench", "--pr-description", *extra, "--root", tree)


def _body(stdout: str) -> str:
    return stdout[stdout.index("[MPS] Migrate ") :]


@pytest.mark.parametrize("op", sorted(CASES))
def test_the_companions_match_their_golden_files(op: str, run, real_tree: Path, release: str, tmp_path: Path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    kernel = CASES[op][1]
    test, bench = work / f"test_{kernel}_reduction_shader.py", work / f"bench_{kernel}.py"
    if _dispatched(real_tree, op):  # --with-test is refused before anything is written
        res = _migrate(run, real_tree, work, op)
        assert res.exit_code != 0 and "runs through this tree's own reduction dispatcher" in res.output, res.output
        assert list(work.iterdir()) == [] and "nothing written" in res.output
        res = _migrate(run, real_tree, work, op, with_test=False)
        assert res.exit_code == 0, res.output
        assert sorted(p.name for p in work.iterdir()) == [bench.name]
    else:
        res = _migrate(run, real_tree, work, op)
        assert res.exit_code == 0, res.output
        assert sorted(p.name for p in work.iterdir()) == sorted([test.name, bench.name])
        assert f"wrote {test}: on a Mac, `python -m pytest {test.name} -v` checks the kernel before you build" in res.output
        # (stored as .golden: pytest would collect a test_*.py under tests/, and linters lint .py files)
        assert_golden(f"companions/{release}/{test.name}.golden", test.read_text())
    assert_golden(f"companions/{release}/{bench.name}.golden", bench.read_text())
    assert_golden(f"companions/{release}/pr_{op}.md", _body(res.stdout))


@pytest.mark.parametrize("op", sorted(CASES))
def test_the_test_embeds_what_the_change_writes_and_skips_here(op: str, run, real_tree: Path, tmp_path: Path, monkeypatch):
    if _dispatched(real_tree, op):
        pytest.skip("no test is written where the tree's dispatcher runs the op (test_the_companions_match_their_golden_files)")
    monkeypatch.chdir(tmp_path)
    assert _migrate(run, real_tree, tmp_path, op).exit_code == 0
    test = tmp_path / f"test_{CASES[op][1]}_reduction_shader.py"
    text = test.read_text()
    compile(text, str(test), "exec")
    source = ast.literal_eval(next(
        n.value for n in ast.parse(text).body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "SOURCE"
    )).strip("\n")
    written = (real_tree / METAL).read_text().rstrip("\n")
    header = (real_tree / HEADER).read_text()
    struct_text = re.search(r"(?ms)^// \w+_stub: where output element.*?^};$", source).group(0)
    assert struct_text in header  # the params struct as the change writes it into the header
    # the kernel and its registrations as the change writes them into the .metal (created, or
    # appended to a file with kernels of its own), compiled alone with the struct inlined
    body = "\n".join(ln for ln in source.split(struct_text, 1)[1].splitlines() if not ln.startswith(("#include", "using namespace"))).strip("\n")
    assert body and body in written
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(test)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "needs an Apple GPU" in proc.stdout and "passed" not in proc.stdout and "error" not in proc.stdout.lower()
    collected = int(re.search(r"(\d+) skipped", proc.stdout).group(1))
    spec = load_reduction_spec(shipped_reduction_spec(op))
    pairs = len(re.findall(r"^REGISTER_\w+_REDUCTION\(\w+, \w+\);$", written, re.M))
    ops_cases = len(spec.try_calls) * len({ti for ti, _to in spec.dtypes})  # every input type the ops take
    assert collected == 1 + pairs * len(spec.try_calls) * 16 + ops_cases


# ---- the generated test's host emulation, run through mpsgen's model of Metal ------------------

_MAIN = r"""
#include <cstring>
static bool read_all(void* p, size_t n) { return std::fread(p, 1, n, stdin) == n; }
static int64_t rd() { int64_t v; if (!read_all(&v, 8)) std::exit(4); return v; }
template <typename T, typename S> static T load(S s) { if constexpr (std::is_same<T, half>::value || std::is_same<T, bfloat>::value) return T::from_bits(s); else return static_cast<T>(s); }
template <typename S, typename T> static S store(T t) { if constexpr (std::is_same<T, half>::value || std::is_same<T, bfloat>::value) return t.bits; else return static_cast<S>(t); }

// stdin: the params struct's bytes (as the test packs them), then the dispatch and the input
template <typename TI, typename SI, typename TO, typename SO>
static int run() {
  int64_t size = rd();
  if (size != (int64_t)sizeof(PARAMS<>)) { std::fprintf(stderr, "params: %lld bytes, the struct has %zu\n", (long long)size, sizeof(PARAMS<>)); return 7; }
  PARAMS<> p;
  if (!read_all(&p, sizeof p)) return 4;
  int64_t groups = rd(), tptg = rd(), count = rd(), offset = rd(), out_len = rd(), alias = rd();
  std::vector<SI> raw(count);
  if (count && !read_all(raw.data(), count * sizeof(SI))) return 4;
  std::unique_ptr<TI[]> in(new TI[count + 1]);
  for (int64_t i = 0; i < count; ++i) in[i] = load<TI, SI>(raw[i]);
  std::unique_ptr<TO[]> out0(new TO[out_len + 1]), out1(new TO[out_len + 1]);
  mpsgen_threads::garbage(out0.get(), out_len * sizeof(TO));
  mpsgen_threads::garbage(out1.get(), out_len * sizeof(TO));
  TO* second = alias ? out0.get() : out1.get();
  for (int64_t g = 0; g < groups; ++g) {
    bool ok = mpsgen_threads::run_threadgroup((unsigned)tptg, (uint64_t)g, [&](unsigned tid) {
      KERNEL<TI, TO>(in.get() + offset, out0.get(), OUTPUT1 p, tid, (uint)tptg, (uint)g, tid % 32, tid / 32);
    });
    if (!ok) { std::fprintf(stderr, "%s\n", mpsgen_threads::M.error); return 5; }
  }
  for (int64_t i = 0; i < out_len; ++i) { SO s = store<SO, TO>(out0[i]); std::fwrite(&s, sizeof(SO), 1, stdout); }
  if (!alias) for (int64_t i = 0; i < out_len; ++i) { SO s = store<SO, TO>(second[i]); std::fwrite(&s, sizeof(SO), 1, stdout); }
  return 0;
}

int main(int argc, char** argv) {
  int which = std::atoi(argv[1]);
CASES  return 3;
}
"""


class _ModelKernel:
    """``lib.<kernel>_<in>_<out>`` of compile_shader, run on the CPU through mpsgen's Metal model."""

    max_threads_per_threadgroup = 1024

    def __init__(self, binary: Path, which: int, outputs: int):
        self.binary, self.which, self.outputs = binary, which, outputs

    def __call__(self, x, *rest, threads: int, group_size: int):
        import torch

        from mpsgen.shim.trial import tensor_bytes, tensor_from_bytes

        *outs, params = rest
        assert len(outs) == self.outputs and threads % group_size == 0 and group_size % 32 == 0
        count = x.untyped_storage().nbytes() // x.element_size()
        whole = x.as_strided((count,), (1,), 0)
        alias = self.outputs > 1 and outs[1] is outs[0]
        raw = bytes(params.tolist())
        head = struct.pack("<q", len(raw)) + raw
        head += struct.pack("<6q", threads // group_size, group_size, count, x.storage_offset(), outs[0].numel(), int(alias))
        proc = subprocess.run([str(self.binary), str(self.which)], input=head + tensor_bytes(torch, whole), capture_output=True, timeout=120)
        assert proc.returncode == 0, proc.stderr.decode()
        size = outs[0].element_size()
        for k, out in enumerate(outs[: 1 if alias else self.outputs]):
            assert out.is_contiguous()
            chunk = proc.stdout[k * out.numel() * size : (k + 1) * out.numel() * size]
            out.copy_(tensor_from_bytes(torch, chunk, out.dtype).view(out.shape))


class _ModelLib:
    def __init__(self, binary: Path, pairs, outputs: int, kernel: str):
        self._kernels = {f"{kernel}_{ti}_{to}": _ModelKernel(binary, i, outputs) for i, (ti, to) in enumerate(pairs)}

    def __getattr__(self, name):
        return self._kernels[name]

    def __dir__(self):
        return list(self._kernels)


@pytest.mark.parametrize("op", sorted(CASES))
def test_the_tests_host_emulation_runs_the_kernel_right(op: str, run, real_tree: Path, tmp_path: Path, monkeypatch):
    """The generated test's cases, its params packing and dispatch (one threadgroup of whole
    SIMD-groups per output element, the outputs bound as the host binds them) run the kernel
    through mpsgen's model of Metal (templates/try: garbage in idle lanes and threadgroup memory)
    in place of the GPU; every case matches torch's CPU op by the test's own comparison."""
    from mpsgen.codegen.reduction import kernel_source, read_helpers

    if _dispatched(real_tree, op):
        pytest.skip("no test is written where the tree's dispatcher runs the op (test_the_companions_match_their_golden_files)")
    from mpsgen.plan.reduction import routed_spec
    from mpsgen.shim.reduction_trial import _CXX, driver_source
    from mpsgen.core.resources import resource_dir
    from mpsgen.shim.toolchain import compiler
    from mpsgen.tree import PytorchTree

    cxx = compiler()
    if cxx is None:
        pytest.skip("needs a C++ compiler")
    monkeypatch.chdir(tmp_path)
    tree = PytorchTree.locate(real_tree)
    spec = load_reduction_spec(shipped_reduction_spec(op))
    cut, _routed = routed_spec(tree, spec)
    helpers = (real_tree / "c10/metal/reduction_utils.h").read_text()
    head = driver_source(cut, helpers, kernel_source(cut, read_helpers(helpers)))
    head = head[: head.index("// ---- the host")]
    cases = "".join(
        f"  if (which == {i}) return run<{_CXX[ti][0]}, {_CXX[ti][1]}, {_CXX[to][0]}, {_CXX[to][1]}>();\n"
        for i, (ti, to) in enumerate(cut.dtypes)
    )
    main = (_MAIN.replace("PARAMS", cut.params_struct).replace("KERNEL", cut.kernel_function).replace("CASES", cases)
            .replace("OUTPUT1 ", "second, " if len(cut.outputs) > 1 else ""))
    for name in ("metal_shim.h", "metal_threads.h"):
        shutil.copy(resource_dir("templates") / "try" / name, tmp_path / name)
    (tmp_path / "model.cpp").write_text(head + main)
    subprocess.run([cxx, "-std=c++17", "-O1", "-fwrapv", "-w", "-o", "model", "model.cpp"], cwd=tmp_path, check=True, timeout=600)

    assert _migrate(run, real_tree, tmp_path, op).exit_code == 0
    text = (tmp_path / f"test_{CASES[op][1]}_reduction_shader.py").read_text()
    namespace: dict = {}
    # the module with the GPU replaced by the CPU (the kernel runs in the model)
    exec(compile(text.replace('"mps"', '"cpu"'), "reduction_shader_test", "exec"), namespace)  # noqa: S102 (our own output)
    lib = _ModelLib(tmp_path / "model", [tuple(p) for p in namespace["PAIRS"]], namespace["OUTPUTS"], cut.kernel_function)
    namespace["test_every_pair_is_registered"](lib)
    check = namespace[f"test_{cut.kernel_function}_matches_cpu"]
    for pair, call, shape in namespace["CASES"]:
        check(lib, pair, call, shape)
    # no rubber stamp: params packed for another struct size are refused by the model, and
    # (var) a wrong correction packed makes the comparison fail
    namespace["MAX_DIMS"] -= 1
    with pytest.raises(AssertionError, match="the struct has"):
        check(lib, 0, 0, 1)
    namespace["MAX_DIMS"] += 1
    if op == "var":
        namespace["CALLS"][0][2]["correction"] += 1
        with pytest.raises(AssertionError):
            check(lib, 0, 0, 1)


# ---- the benchmark -----------------------------------------------------------------------------


@pytest.mark.parametrize("op", sorted(CASES))
def test_the_benchmark_runs_and_prints_the_table(op: str, run, real_tree: Path, tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _migrate(run, real_tree, tmp_path, op, with_test=not _dispatched(real_tree, op)).exit_code == 0
    kernel = CASES[op][1]
    name = f"bench_{kernel}.py"
    text = (tmp_path / name).read_text()
    doc = ast.get_docstring(ast.parse(text))
    for command in (f"python {name} --label before", f"python {name} --label after",
                    f"python {name} --compare bench_{kernel}_before.json bench_{kernel}_after.json"):
        assert command in doc
    for label in ("before", "after"):
        proc = subprocess.run([sys.executable, name, "--label", label, "--device", "cpu", "--quick"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
    proc = subprocess.run([sys.executable, name, "--compare", f"bench_{kernel}_before.json", f"bench_{kernel}_after.json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    head = lines.index("| op | dtype | reduction | shape | before (cpu) | after (cpu) | speed-up |")
    rows = [ln for ln in lines[head + 2 :] if ln.startswith("| ")]
    spec = load_reduction_spec(shipped_reduction_spec(op))
    dtypes = {ti for ti, _to in spec.dtypes}
    assert len(rows) == len(spec.ops) * len(dtypes) * 2 * 3  # ops x dtypes x quick sizes x inner/outer/full
    assert {r.split(" | ")[2] for r in rows} == {"inner", "outer", "full"}
    assert {r.split(" | ")[0].lstrip("| ") for r in rows} == set(spec.ops)
    timed = [r for r in rows if not r.endswith("| n/a |")]
    assert len(timed) >= len(rows) - 2 * 3 * len(spec.ops)  # at most one dtype the CPU op refuses
    record = json.loads((tmp_path / f"bench_{kernel}_after.json").read_text())
    assert record["op"] == kernel and record["device"] == "cpu"
    proc = subprocess.run([sys.executable, name, "--label", "before"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "MPS is not available here" in proc.stderr
    proc = subprocess.run([sys.executable, name, "--label", "x", "--device", "cpu", "--reductions", "sideways"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "--reductions sideways: one of inner, outer, full" in proc.stderr


# ---- the PR description and the command's behaviour ----------------------------------------


def test_the_pr_text_names_what_moves_the_losses_and_the_reviewers(run, real_tree: Path, release: str, tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (real_tree / "CODEOWNERS").write_text(
        "# owners\n/aten/ @core\n/aten/src/ATen/native/mps/ @malfet @Isalia20\n/test/test_mps.py @malfet @Isalia20\n"
        "/torch/testing/ @tester\n"
    )
    res = run("migrate-from-mpsgraph", "prod", "--allow-dtype-loss", "--pr-description", "--dry-run", "--root", real_tree)
    assert res.exit_code == 0, res.output
    body = _body(res.stdout)
    assert body.startswith("[MPS] Migrate prod to Metal\n\nMoves `prod` off MPSGraph")
    assert "- `aten/src/ATen/native/native_functions.yaml`: MPS joins the shared kernel line of `prod`, `prod.int_out` (in place of `prod_mps`, `prod_out_mps`)." in body
    assert "removes the MPSGraph implementations it replaces (`prod_mps`, `prod_out_mps`)" in body
    assert "No longer served on MPS: complex `prod`" in body and "SUPPORTED_COMPLEX_OPS" in body
    assert "asked to keep its dtype (`dtype=`)" in body
    assert 'python -m pytest test/test_mps.py -v -k "test_output_match_prod_mps"' in body
    assert body.rstrip("\n").splitlines()[-1] == "cc @core @malfet @Isalia20 @tester"  # the last matching rule of each file
    for internal in ("mpsgen", "--allow-dtype-loss", "dispatch stub:", "ReduceOpsUtils.h casts"):
        assert internal not in body, internal
    pairs = "float32 -> float32, float16 -> float16, bfloat16 -> bfloat16"
    if release == "2.14.1":
        assert f"Dtypes (input -> output): {pairs}, float16 -> float32, bfloat16 -> float32, int64 -> int64, int32 -> int64" in body
    else:
        assert f"Dtypes (input -> output): {pairs}, int64 -> int64." in body
    res = run("migrate-from-mpsgraph", "var", "--pr-description", "--dry-run", "--root", real_tree)
    body = _body(res.stdout)
    assert "`var.correction_out`" in body and "had no MPS kernel and now run it too" in body
    assert "what only they used (`graph_std_var`)" in body
    assert "No MPS xfail or skip entry changes" in body and "No longer served" not in body
    assert "Benchmark:" not in body and "test_std_var_reduction_shader.py" not in body  # (not asked for)


def test_codeowners_rules():
    rules = read_rules("/aten/ @a\n*.metal @b  # metal files anywhere\ndocs/ @c\n/aten/src/x.h\n")
    owners = lambda p: next((o for rx, o in reversed(rules) if rx.match(p)), ())  # noqa: E731
    assert owners("aten/src/y.h") == ("@a",) and owners("aten/k/K.metal") == ("@b",)
    assert owners("aten/src/x.h") == () and owners("a/docs/z") == ("@c",) and owners("docs") == ()
    assert owners("baten/y.h") == ()


def test_owners_of_a_tree_without_codeowners_is_nobody(real_tree: Path):
    from mpsgen.tree import PytorchTree

    assert owners_of(PytorchTree.locate(real_tree), ["aten/src/ATen/native/mps/kernels/ReduceOps.metal"]) == []


def test_side_files_are_written_with_the_change_only(run, real_tree: Path, tmp_path: Path, monkeypatch):
    """A dry run or a patch writes no side file; one in the way refuses everything before
    anything is written."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    before = snapshot(real_tree)
    res = _migrate(run, real_tree, work, "var", "--dry-run")
    assert res.exit_code == 0 and f"dry run: would write {work / 'test_std_var_reduction_shader.py'}" in res.output
    res = _migrate(run, real_tree, work, "var", "--patch", str(work / "var.patch"))
    assert res.exit_code == 0 and "not written with --patch" in res.output
    assert sorted(p.name for p in work.iterdir()) == ["var.patch"] and snapshot(real_tree) == before
    (work / "var.patch").unlink()
    (work / "bench_std_var.py").write_text("mine\n")
    res = _migrate(run, real_tree, work, "var")
    assert res.exit_code == 2 and "--with-bench" in res.output and "exists" in res.output and "Traceback" not in res.output
    assert snapshot(real_tree) == before and (work / "bench_std_var.py").read_text() == "mine\n"
    assert not (work / "test_std_var_reduction_shader.py").exists()
