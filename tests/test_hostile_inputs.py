"""Hostile and unlucky input: a clear error, the right exit code, and nothing written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mpsgen.tree import NATIVE_FUNCTIONS
from tests.conftest import git_init, snapshot

OP = ("new-op", "heaviside", "--binary", "--integer")


def test_patch_refuses_a_tracked_file_of_the_tree(real_tree: Path, run):
    git_init(real_tree)
    before = snapshot(real_tree)
    for force in ((), ("--force",)):
        res = run(*OP, "--patch", real_tree / NATIVE_FUNCTIONS, *force, "--root", real_tree)
        assert res.exit_code == 2 and "a file of the PyTorch tree" in res.output
        assert snapshot(real_tree) == before


def test_patch_refuses_an_existing_file_unless_forced(real_tree: Path, run, tmp_path: Path):
    target = tmp_path / "mine.txt"
    target.write_text("keep me\n")
    res = run(*OP, "--patch", target, "--root", real_tree)
    assert res.exit_code == 2 and "the file exists" in res.output and "--force" in res.output
    assert target.read_text() == "keep me\n"
    forced = run(*OP, "--patch", target, "--force", "--root", real_tree)
    assert forced.exit_code == 0, forced.output
    assert target.read_text().startswith("diff --git")


def test_patch_dash_is_standard_output(real_tree: Path, run, tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = run(*OP, "--patch", "-", "--root", real_tree)
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("diff --git") and not (tmp_path / "-").exists()


@pytest.mark.parametrize("kind", ["non-empty folder", "file"])
def test_demo_keep_only_creates_a_new_or_empty_folder(tmp_path: Path, run, kind):
    keep = tmp_path / "checkout"
    if kind == "file":
        keep.write_text("not a folder\n")
    else:
        keep.mkdir()
        (keep / "work.txt").write_text("uncommitted work\n")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    res = run("demo", "--keep", keep)
    assert res.exit_code == 2 and "not an empty folder" in res.output
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_demo_keep_new_folder_works(tmp_path: Path, run):
    res = run("demo", "--keep", tmp_path / "new")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "new" / NATIVE_FUNCTIONS).is_file()


@pytest.mark.parametrize(
    "files, words",
    [
        ("{mm: .git/config}", ["files.mm", "not a .mm file directly under aten/src/ATen/native/mps/operations/"]),
        ("{metal: aten/src/ATen/native/native_functions.yaml}", ["files.metal", "not a .metal file"]),
        (
            "{metal: aten/src/ATen/native/mps/kernels/BinaryKernel.metal, mm: aten/src/ATen/native/mps/kernels/BinaryKernel.metal}",
            ["files.mm"],
        ),
        ("{metal: aten/src/ATen/native/mps/kernels/../../native_functions.yaml}", ["outside the PyTorch tree"]),
    ],
)
def test_spec_files_only_name_mps_sources(real_tree: Path, run, tmp_path: Path, files, words):
    spec = tmp_path / "heaviside.yaml"
    spec.write_text(f"name: heaviside\nkind: binary\nexpr: a + b\nfiles: {files}\n")
    before = snapshot(real_tree)
    res = run("new-op", "heaviside", "--spec", spec, "--root", real_tree)
    assert res.exit_code == 2, res.output
    for w in words:
        assert w in res.output
    assert str(spec) in res.output  # the error names the spec file (and line)
    assert snapshot(real_tree) == before


def test_spec_files_naming_one_file_twice(tmp_path: Path):
    from mpsgen.spec.op import parse_spec_text

    k = "aten/src/ATen/native/mps/kernels/X.metal"
    _spec, problems = parse_spec_text(f"name: foo\nkind: unary\nfiles: {{metal: {k}, mm: aten/src/ATen/native/mps/operations/X.mm}}\n", "s.yaml")
    assert not problems
    _spec, problems = parse_spec_text("name: foo\nkind: unary\nfiles: {mm: aten/src/ATen/native/mps/operations/X.metal}\n", "s.yaml")
    assert problems and "not a .mm file" in problems[0][1]


def test_target_that_is_not_a_regular_file(real_tree: Path, run, tmp_path: Path):
    fifo_dir = real_tree / "aten/src/ATen/native/mps/kernels/Odd.metal"
    fifo_dir.mkdir()
    spec = tmp_path / "heaviside.yaml"
    spec.write_text("name: heaviside\nkind: binary\nexpr: a + b\nfiles: {metal: aten/src/ATen/native/mps/kernels/Odd.metal}\n")
    res = run("new-op", "heaviside", "--spec", spec, "--root", real_tree)
    assert res.exit_code == 2 and "not a regular file" in res.output
    assert os.listdir(fifo_dir) == []


def test_paths_with_brackets_are_printed_as_they_are(tmp_path: Path, run):
    from mpsgen.report.practice import build_practice_tree

    root, _ = build_practice_tree(tmp_path / "pytorch[wip]" / "a[/]b")
    res = run(*OP, "--root", root)
    assert res.exit_code == 0, res.output
    assert "pytorch[wip]" in res.output and "a[/]b" in res.output


def test_spec_validate_keeps_bracketed_hints(tmp_path: Path, run):
    spec = tmp_path / "s.yaml"
    spec.write_text("name: heaviside\nkind: binary\nrows: [heaviside.out, 'bad row']\n")
    res = run("spec", "validate", spec)
    assert res.exit_code == 2 and "'bad row'" in res.output


@pytest.mark.parametrize(
    "args, words",
    [
        (["new-op", "heaviside", "--spec", "/dev/zero"], ["/dev/zero", "not a regular file"]),
        (["new-op", "heaviside", "--binary", "--functor-file", "/dev/zero"], ["/dev/zero", "not a regular file"]),
        (["check", "@/dev/zero"], ["/dev/zero", "not a regular file"]),
    ],
)
def test_devices_are_not_read(real_tree: Path, run, args, words):
    res = run(*args, "--root", real_tree)
    assert res.exit_code == 2, res.output
    for w in words:
        assert w in res.output


def test_a_fifo_in_place_of_a_kernel_file_is_refused_not_waited_on(real_tree: Path, run):
    metal = real_tree / "aten/src/ATen/native/mps/kernels/BinaryKernel.metal"
    metal.unlink()
    os.mkfifo(metal)
    res = run(*OP, "--root", real_tree)
    assert res.exit_code == 2 and "not a regular file" in res.output


def test_an_empty_functor_file_is_refused(real_tree: Path, run, tmp_path: Path):
    empty = tmp_path / "f.metal"
    empty.write_text("  \n")
    res = run(*OP, "--functor-file", empty, "--root", real_tree)
    assert res.exit_code == 2 and "is empty" in res.output


def test_check_refuses_a_fifo_instead_of_hanging(real_tree: Path, run):
    metal = real_tree / "aten/src/ATen/native/mps/kernels/UnaryKernel.metal"
    metal.unlink()
    os.mkfifo(metal)
    res = run("check", "--root", real_tree)
    assert res.exit_code == 2 and "not a regular file" in res.output


def test_check_path_missing_is_exit_2(real_tree: Path, run):
    res = run("check", "--root", real_tree, real_tree / "aten/src/ATen/native/nope.mm")
    assert res.exit_code == 2 and "no such file or folder" in res.output


def test_check_a_folder_means_the_files_under_it(real_tree: Path, run):
    whole = run("check", "--root", real_tree)
    assert whole.exit_code == 1  # the practice tree with 2.13's yaml has findings
    for folder in (real_tree, real_tree / "aten/src/ATen/native"):
        res = run("check", "--root", real_tree, folder)
        assert res.exit_code == 1 and "no findings" not in res.output, folder
    top = run("check", "--root", real_tree, real_tree)
    assert top.stdout == whole.stdout
