"""--with-test writes a shader test pytest collects (and skips without an Apple GPU);
--pr-description prints a PR title and body; neither writes into the tree."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import snapshot

HEAVISIDE = ("new-op", "heaviside", "--binary", "--integer", "--expr", "a == 0 ? b : T(a > 0)")


def test_with_test_writes_a_shader_test_pytest_collects_and_skips_here(real_tree: Path, run, tmp_path: Path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    res = run(*HEAVISIDE, "--with-test", "--root", real_tree)
    assert res.exit_code == 0, res.output
    test_file = work / "test_heaviside_shader.py"
    text = test_file.read_text()
    ast.parse(text)
    assert "struct heaviside_functor" in text and "torch.mps.compile_shader" in text
    for dtype in ("torch.float16", "torch.bfloat16", "torch.int64", "torch.bool"):
        assert dtype in text
    assert 'float("nan")' in text and "torch.iinfo" in text and "is_contiguous" in text
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(test_file)],
        capture_output=True, text=True, cwd=work, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "skipped" in proc.stdout and "needs an Apple GPU" in proc.stdout and "passed" not in proc.stdout
    # a second run refuses to overwrite it, and writes nothing to the tree
    before = snapshot(real_tree)
    again = run(*HEAVISIDE, "--with-test", "--root", real_tree)
    assert again.exit_code == 2 and "exists" in again.output
    assert snapshot(real_tree) == before


def test_with_test_refuses_a_scaffold_before_writing(real_tree: Path, run, tmp_path: Path, monkeypatch, without_shipped_spec):
    monkeypatch.chdir(tmp_path)
    without_shipped_spec("special_laguerre_polynomial_l")
    before = snapshot(real_tree)
    res = run("new-op", "special_laguerre_polynomial_l", "--binary", "--with-test", "--force", "--root", real_tree)
    assert res.exit_code == 1 and "scaffold" in res.output
    assert snapshot(real_tree) == before and not list(tmp_path.glob("test_*_shader.py"))


def test_pr_description(real_tree: Path, run, tmp_path: Path, monkeypatch):
    """What a reviewer reads: the change file by file, dtypes, tests un-xfailed, the test plan;
    none of mpsgen's notes on how it found things (stub resolution, line numbers, macros)."""
    monkeypatch.chdir(tmp_path)
    res = run(*HEAVISIDE, "--dry-run", "--pr-description", "--root", real_tree)
    assert res.exit_code == 0, res.output
    body = res.stdout[res.stdout.index("[MPS] Add Metal kernel for heaviside") :]
    assert body.splitlines()[1] == "" and body.splitlines()[2].startswith("Adds a Metal kernel for `heaviside`")
    for line in (
        "- `aten/src/ATen/native/native_functions.yaml`: MPS runs the structured kernel CPU and CUDA share (`heaviside_out`).",
        "- `aten/src/ATen/native/mps/kernels/BinaryKernel.metal`: adds `heaviside_functor` and registers the `heaviside` kernel for the dtypes below.",
        "- `aten/src/ATen/native/mps/operations/BinaryKernel.mm`: dispatches `heaviside_stub` to the Metal kernel.",
        "- `torch/testing/_internal/common_mps.py`: removes the MPS xfail/skip entries of `heaviside`, which now has a kernel.",
        "Dtypes: float32, float16, bfloat16, int64, int32, int16, uint8, int8, bool.",
    ):
        assert line + "\n" in body, body
    assert "No longer expected to fail on MPS: " in body and "`TestCommon.test_variant_consistency_eager`" in body
    assert "`TestConsistency.test_output_match`" in body and "`TestCommon.test_python_ref`" in body
    plan = body[body.index("Test plan:\n```\n") + len("Test plan:\n```\n") :].split("\n```")[0].splitlines()
    assert len(plan) == 1 and plan[0].startswith('python -m pytest test/test_mps.py test/test_ops.py -v -k "test_output_match_heaviside_mps or ')
    for internal in ("dispatch stub:", "DECLARE_DISPATCH", "chosen", "REGISTER_FLOAT_BINARY_OP", "un-xfails", "mpsgen", ".cpp:", ".h:"):
        assert internal not in body, internal
    # frac runs MPSGraph code in both releases (acosh, the case here before, does not in 2.14.1)
    mig = run("migrate-from-mpsgraph", "frac", "--dry-run", "--pr-description", "--root", real_tree)
    assert mig.exit_code == 0, mig.output
    body = mig.stdout[mig.stdout.index("[MPS] Migrate frac to Metal") :]
    changes = [line for line in body.splitlines() if line.startswith("- ")]
    assert changes[0].startswith("- `aten/src/ATen/native/native_functions.yaml`: ") and "in place of `frac_out_mps`" in changes[0]
    assert "- `aten/src/ATen/native/mps/operations/UnaryOps.mm`: removes the MPSGraph implementation it replaces (`frac_out_mps`)." in changes
    assert "dispatch stub:" not in body and "DECLARE_DISPATCH" not in body


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_a_failure_after_the_write_says_the_change_is_applied(real_tree: Path, tmp_path: Path):
    """stdout full when the PR text is printed: the tree was written, so mpsgen says so (exit
    3), never 'nothing written', and prints no traceback."""
    before = snapshot(real_tree)
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "mpsgen", "new-op", "heaviside", "--pr-description", "--root", str(real_tree)],
            stdout=full, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        )
    assert proc.returncode == 3, proc.stderr
    assert "error: the change is applied (5 file(s) in" in proc.stderr and "printing the PR description failed" in proc.stderr
    assert "nothing written" not in proc.stderr and "Traceback" not in proc.stderr
    assert snapshot(real_tree) != before


def test_a_closed_output_after_the_write_says_the_change_is_applied(release_template: Path, tmp_path: Path):
    """`>&-` (stdout closed) and `2>&-` (stderr closed) after the write: exit 3, no traceback,
    the tree written."""
    import shutil

    for redirect, said in ((">&-", "printing the PR description failed (standard output is closed)"), ("2>&-", "")):
        tree = Path(shutil.copytree(release_template, tmp_path / f"pytorch{len(redirect)}"))
        before = snapshot(tree)
        cmd = f"{sys.executable} -m mpsgen new-op heaviside --pr-description --root {tree} {redirect}"
        proc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, cwd=tmp_path)
        assert proc.returncode == 3, (redirect, proc.stderr)
        assert said in proc.stderr and "Traceback" not in proc.stdout + proc.stderr
        assert snapshot(tree) != before


def test_with_bench_writes_the_benchmark_script_and_the_pr_marks_its_place(real_tree: Path, run, tmp_path: Path, monkeypatch):
    """bench_<op>.py beside the change: an existing one is refused before anything is written
    (--force, which writes a change that would not build, does not replace it either); the PR
    description gets a marked place for its table."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    script = work / "bench_heaviside.py"
    script.write_text("mine\n")
    before = snapshot(real_tree)
    res = run(*HEAVISIDE, "--with-bench", "--pr-description", "--root", real_tree)
    assert res.exit_code == 2 and "--with-bench" in res.output and "exists" in res.output
    assert snapshot(real_tree) == before and script.read_text() == "mine\n"
    res = run(*HEAVISIDE, "--with-bench", "--pr-description", "--force", "--root", real_tree)
    assert res.exit_code == 2 and script.read_text() == "mine\n" and snapshot(real_tree) == before
    script.unlink()
    res = run(*HEAVISIDE, "--with-bench", "--pr-description", "--root", real_tree)
    assert res.exit_code == 0, res.output
    text = script.read_text()
    ast.parse(text)
    assert 'OP = "heaviside"' in text and "--label before --device cpu" in text  # new-op: the "before" is the CPU op
    assert f"wrote {script}: run it on a Mac before and after the change" in res.output
    assert "python bench_heaviside.py --compare bench_heaviside_before.json bench_heaviside_after.json` prints the table" in res.output
    body = res.stdout[res.stdout.index("[MPS] Add Metal kernel for heaviside") :]
    tail = body.rstrip("\n").splitlines()[-3:]
    assert tail[:2] == ["Benchmark:", ""] and tail[2].startswith("<!-- benchmark table: ") and tail[2].endswith(" -->")
    assert "`python bench_heaviside.py --compare bench_heaviside_before.json bench_heaviside_after.json`" in tail[2]
    assert "--label before --device cpu" in tail[2] and "mpsgen" not in body
    assert not list(work.glob(".bench_heaviside.py.*"))  # (no temporary file left)


def test_with_bench_on_a_migration_dry_run_and_patch(real_tree: Path, run, tmp_path: Path, monkeypatch):
    """A dry run or a patch writes no script (it says what it would write); a migration's
    "before" is the base commit's MPS kernel."""
    monkeypatch.chdir(tmp_path)
    res = run("migrate-from-mpsgraph", "frac", "--with-bench", "--dry-run", "--pr-description", "--root", real_tree)
    assert res.exit_code == 0, res.output
    assert f"dry run: would write {tmp_path / 'bench_frac.py'}" in res.output and not (tmp_path / "bench_frac.py").exists()
    assert "`python bench_frac.py --label before` with the base commit built" in res.stdout
    res = run("migrate-from-mpsgraph", "frac", "--with-bench", "--patch", tmp_path / "frac.patch", "--root", real_tree)
    assert res.exit_code == 0, res.output
    assert (tmp_path / "frac.patch").exists() and not (tmp_path / "bench_frac.py").exists()
    res = run("migrate-from-mpsgraph", "frac", "--with-bench", "--root", real_tree)
    assert res.exit_code == 0, res.output
    text = (tmp_path / "bench_frac.py").read_text()
    assert 'OP = "frac"' in text and "# PyTorch built from the base commit (before the change):" in text and "--device cpu    #" not in text


def test_a_bench_script_that_cannot_be_written_leaves_the_tree_as_it_was(real_tree: Path, run, tmp_path: Path, monkeypatch):
    """The side files belong to the change: written first, so a folder that takes no file
    means nothing is written (exit 2), not a change applied without its script."""
    import errno

    import mpsgen.cli.change

    def full(path, data, *, replace):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(mpsgen.cli.change, "write_whole", full)
    before = snapshot(real_tree)
    res = run(*HEAVISIDE, "--with-bench", "--root", real_tree)
    assert res.exit_code == 2, res.output
    assert f"cannot write {tmp_path / 'bench_heaviside.py'} (No space left on device); nothing written." in res.output
    assert snapshot(real_tree) == before and not (tmp_path / "bench_heaviside.py").exists()


def test_the_side_files_go_when_the_change_is_not_applied(real_tree: Path, run, tmp_path: Path, monkeypatch):
    import mpsgen.patch.changeset
    from mpsgen.core.errors import Refused

    def refuse(self, command=""):
        raise Refused("aten/src/ATen/native/native_functions.yaml changed since mpsgen read it; nothing was written.")

    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setattr(mpsgen.patch.changeset.Changeset, "apply", refuse)
    before = snapshot(real_tree)
    res = run(*HEAVISIDE, "--with-bench", "--with-test", "--root", real_tree)
    assert res.exit_code == 1 and "changed since" in res.output, res.output
    assert snapshot(real_tree) == before and list(work.iterdir()) == []
