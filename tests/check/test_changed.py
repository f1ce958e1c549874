"""``mpsgen check --changed`` / ``--since REF`` / ``--fail-on``: what a change answers for,
on a git checkout of the consistent check tree (torch's real yaml rows)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from mpsgen.check.changes import parse_hunks
from mpsgen.tree import COMMON_MPS, NATIVE_FUNCTIONS

from .conftest import BINARY_MM, UNARY_OPS_MM, edit, line_of, shared_line, yaml_sign

FAULT = ("REGISTER_DISPATCH(hypot_stub, &hypot_mps_kernel);\n", "")
STALE_XFAIL = ('            "cummax": None,\n', '            "cummax": None,\n            "exp": [torch.float16],\n')


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), "-c", "user.email=t@t", "-c", "user.name=t", *args], check=True, capture_output=True, text=True
    ).stdout


def commit(root: Path, message: str = "change") -> None:
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)


@pytest.fixture
def repo(check_tree: Path) -> Path:
    git(check_tree, "init", "-q")
    commit(check_tree, "consistent tree")
    return check_tree


def found(result) -> list[tuple[str, str, int]]:
    return [(f["code"], f["path"], f["line"]) for f in json.loads(result.stdout)["findings"]]


def touch_yaml_entry(root: Path, kernel: str) -> None:
    """A change to one native_functions.yaml entry that no rule minds: a comment under its
    shared dispatch line."""
    line = shared_line(root, kernel)
    edit(root, NATIVE_FUNCTIONS, line, line + "    # touched\n")


def test_no_change_no_findings_even_with_faults_in_the_tree(run, repo):
    edit(repo, BINARY_MM, *FAULT)
    commit(repo, "fault committed")
    whole = run("check", "--root", repo)
    assert whole.exit_code == 1 and "MPS002" in whole.stdout
    res = run("check", "--changed", "--root", repo)
    assert res.exit_code == 0 and res.stdout == ""
    assert "no findings (the change against HEAD: 0 files)" in res.stderr


def test_an_error_the_change_causes_is_reported_where_it_is(run, repo):
    """Dropping hypot's REGISTER_DISPATCH from BinaryKernel.mm: the MPS002 is reported at the
    yaml row, a line the change does not touch."""
    edit(repo, BINARY_MM, *FAULT)
    res = run("check", "--changed", "--format", "json", "--root", repo)
    assert res.exit_code == 1, res.output
    row = line_of(repo, NATIVE_FUNCTIONS, shared_line(repo, "hypot_out").rstrip("\n"))
    assert found(res) == [("MPS002", NATIVE_FUNCTIONS, row)]
    # the same when pre-commit passes only the file it changed, or another one
    assert "MPS002" in run("check", "--changed", "--root", repo, repo / BINARY_MM).stdout
    assert "MPS002" in run("check", "--changed", "--root", repo, repo / UNARY_OPS_MM).stdout


def test_findings_already_in_the_tree_block_nothing_elsewhere(run, repo):
    """sign moved to the shared line and committed: MPS002 (error) and MPS007 (warning) are in
    the tree. A change to another yaml entry reports neither; a change to sign's entry reports
    both (they are on, or name, the lines it touches) and fails on the error."""
    before = set(found(run("check", "--format", "json", "--root", repo)))
    edit(repo, NATIVE_FUNCTIONS, *yaml_sign(repo))
    commit(repo, "sign half-migrated")
    assert sorted(c for c, _p, _l in set(found(run("check", "--format", "json", "--root", repo))) - before) == ["MPS002", "MPS007"]
    touch_yaml_entry(repo, "hypot_out")
    elsewhere = run("check", "--changed", "--root", repo)
    assert elsewhere.exit_code == 0 and elsewhere.stdout == "", elsewhere.output
    git(repo, "checkout", "--", NATIVE_FUNCTIONS)
    touch_yaml_entry(repo, "sign_out")
    there = run("check", "--changed", "--format", "json", "--root", repo)
    assert there.exit_code == 1
    assert sorted(c for c, _p, _l in found(there)) == ["MPS002", "MPS007"]  # MPS007 names sign's yaml row


def test_warnings_alone_do_not_fail_unless_configured(run, repo):
    edit(repo, COMMON_MPS, *STALE_XFAIL)  # MPS009, on the line the change adds
    res = run("check", "--changed", "--root", repo)
    assert res.exit_code == 0 and "MPS009" in res.stdout
    assert "warnings alone do not fail" in res.stderr
    assert run("check", "--changed", "--fail-on", "warning", "--root", repo).exit_code == 1
    (repo / ".mpsgen.toml").write_text('fail_on = "warning"\n')
    assert run("check", "--changed", "--root", repo).exit_code == 1
    # without --changed every finding fails, as before
    (repo / ".mpsgen.toml").unlink()
    assert run("check", "--root", repo).exit_code == 1
    assert run("check", "--fail-on", "error", "--root", repo).exit_code == 0
    (repo / ".mpsgen.toml").write_text('fail_on = "sometimes"\n')
    bad = run("check", "--changed", "--root", repo)
    assert bad.exit_code == 2 and "fail_on" in bad.stderr


def test_since_names_the_base(run, repo):
    edit(repo, BINARY_MM, *FAULT)
    commit(repo, "fault")
    assert run("check", "--changed", "--root", repo).exit_code == 0
    res = run("check", "--since", "HEAD~1", "--root", repo)
    assert res.exit_code == 1 and "MPS002" in res.stdout and "the change against HEAD~1: 1 file" in res.stderr
    bad = run("check", "--since", "no-such-branch", "--root", repo)
    assert bad.exit_code == 2 and "no-such-branch" in bad.stderr and "Traceback" not in bad.output


def test_pre_commit_from_ref_is_the_base(run, repo, monkeypatch):
    edit(repo, BINARY_MM, *FAULT)
    commit(repo, "fault")
    monkeypatch.setenv("PRE_COMMIT_FROM_REF", "HEAD~1")
    assert "MPS002" in run("check", "--changed", "--root", repo).stdout


def test_a_file_the_change_adds_is_read_as_new(run, repo):
    """A new .mm file registering hypot_stub a second time (MPS005): new in the change."""
    (repo / "aten/src/ATen/native/mps/operations/Extra.mm").write_text(
        "namespace at::native {\nstatic void hypot2(TensorIteratorBase& iter) {}\nREGISTER_DISPATCH(hypot_stub, &hypot2);\n}\n"
    )
    git(repo, "add", "-A")  # staged, as pre-commit sees a new file
    res = run("check", "--changed", "--format", "json", "--root", repo)
    assert "MPS005" in {c for c, _p, _l in found(res)}, res.output


def test_a_file_the_change_adds_is_read_even_before_git_add(run, repo):
    """new-kernel writes new .mm/.metal files: untracked (not ignored) ones are the change's too."""
    (repo / "aten/src/ATen/native/mps/operations/Extra.mm").write_text(
        "namespace at::native {\nstatic void hypot2(TensorIteratorBase& iter) {}\nREGISTER_DISPATCH(hypot_stub, &hypot2);\n}\n"
    )
    res = run("check", "--changed", "--format", "json", "--root", repo)
    assert ("MPS005", "aten/src/ATen/native/mps/operations/Extra.mm") in {(c, p) for c, p, _l in found(res)}, res.output


def test_lintrunner_offers_fixes_only_for_touched_files(run, repo):
    """sign moved to the shared line (not committed): its MPSGraph impl in UnaryOps.mm is dead
    (MPS007, naming the touched yaml row). The finding is shown; its fix, in a file the change
    does not touch, is not offered. A stale xfail the change adds is shown with its fix."""
    edit(repo, NATIVE_FUNCTIONS, *yaml_sign(repo))
    edit(repo, COMMON_MPS, *STALE_XFAIL)
    res = run("check", "--changed", "--format", "lintrunner", "--root", repo, repo / NATIVE_FUNCTIONS, repo / COMMON_MPS)
    messages = {m["code"]: m for m in map(json.loads, res.stdout.splitlines())}
    assert set(messages) == {"MPS002", "MPS007", "MPS009"}, res.stdout
    assert messages["MPS007"]["path"].endswith(UNARY_OPS_MM) and messages["MPS007"]["replacement"] is None
    assert messages["MPS009"]["replacement"] is not None and '"exp": [torch.float16]' not in messages["MPS009"]["replacement"]


def test_fix_edits_only_the_files_the_change_touches(run, repo):
    edit(repo, NATIVE_FUNCTIONS, *yaml_sign(repo))
    edit(repo, COMMON_MPS, *STALE_XFAIL)
    before = (repo / UNARY_OPS_MM).read_text()
    res = run("check", "--changed", "--fix", "--root", repo)
    assert (repo / UNARY_OPS_MM).read_text() == before  # the dead impl stays: not the change's file
    assert '"exp": [torch.float16]' not in (repo / COMMON_MPS).read_text(), res.output


def test_outside_a_git_checkout(run, check_tree):
    res = run("check", "--changed", "--root", check_tree)
    assert res.exit_code == 2 and "git" in res.stderr and "Traceback" not in res.output


def test_parse_hunks_takes_counts_not_look_alike_lines():
    diff = "\n".join([
        "diff --git a/x.yaml b/x.yaml",
        "--- a/x.yaml",
        "+++ b/x.yaml",
        "@@ -3,0 +4,2 @@ ctx",
        "+++ looks like a header",
        "+@@ -1 +1 @@",
        "@@ -9 +10,0 @@",
        "-gone",
        "diff --git a/gone.mm b/gone.mm",
        "deleted file mode 100644",
        "--- a/gone.mm",
        "+++ /dev/null",
        "@@ -1 +0,0 @@",
        "-x",
        'diff --git "a/sp\\303\\251cial.mm" "b/sp\\303\\251cial.mm"',
        '--- "a/sp\\303\\251cial.mm"',
        '+++ "b/sp\\303\\251cial.mm"',
        "@@ -1 +1 @@",
        "-a",
        "+b",
        "\\ No newline at end of file",
        "",
    ])
    assert parse_hunks(diff) == {"x.yaml": [(4, 2), (10, 0)], "spécial.mm": [(1, 1)]}


def test_an_error_the_change_causes_on_a_partial_tree_is_not_hidden(run, real_tree: Path):
    """On a sample of files (the practice tree: most MPS kernels' sources missing) check
    hides MPS001/MPS002 as the missing files' doing; one the change itself causes, against
    a base that did not have it, is the change's and blocks it."""
    git(real_tree, "init", "-q")
    commit(real_tree, "practice tree")
    assert "the tree looks partial" in run("check", "--root", real_tree).stderr
    edit(real_tree, BINARY_MM, *FAULT)
    res = run("check", "--changed", "--format", "json", "--root", real_tree)
    assert res.exit_code == 1 and ("MPS002", NATIVE_FUNCTIONS) in {(c, p) for c, p, _l in found(res)}, res.output


def test_an_error_a_cpp_change_causes_is_not_taken_for_the_base_s(run, repo):
    """A TORCH_IMPL_FUNC(cos_out) added to UnaryOps.cpp, calling heaviside_stub, which MPS does
    not register: the MPS002 is at cos's yaml row, a line the change does not touch, and new. (The base is read
    with its own row -> stub resolver: one shared with the tree as it is now would find the
    error in the base too, and hide it.)"""
    cpp = "aten/src/ATen/native/UnaryOps.cpp"
    assert "MPS002" not in run("check", "--root", repo).stdout
    edit(repo, cpp, "PRACTICE_UNARY_IMPL(frac_out, frac_stub)\n", "PRACTICE_UNARY_IMPL(frac_out, frac_stub)\nPRACTICE_UNARY_IMPL(cos_out, heaviside_stub)\n")
    whole = run("check", "--format", "json", "--root", repo)
    assert [c for c, _p, _l in found(whole)] == ["MPS002"], whole.stdout
    res = run("check", "--changed", "--format", "json", "--root", repo)
    assert res.exit_code == 1 and found(res) == found(whole), res.output
