"""A change cut short by a kill (no handler, no cleanup: ``os._exit`` in a forked child at a
chosen step) is found by the next run: new-op refuses naming it, plain ``check`` reports it
(MPS016), ``recover`` lists each file's state, and ``--resume`` / ``--abort`` end with exactly
the fully changed or the untouched tree, with no temporary file left."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import mpsgen.patch.changeset as changeset_mod
import mpsgen.patch.journal as journal_mod
from mpsgen.patch.changeset import Changeset
from mpsgen.patch.journal import Journal
from mpsgen.plan.newop import plan_new_op
from mpsgen.report.practice import build_practice_tree
from mpsgen.spec.op import FunctorSource, OpSpec
from mpsgen.tree import PytorchTree, journal_path

SPEC = OpSpec(
    name="heaviside", kind="binary", dtypes=("integer",),
    functor=FunctorSource(expr="a == 0 ? b : static_cast<decltype(a)>(a > 0)"),
)


def _state(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and ".git/" not in p.as_posix() + "/"}


def _plan(root: Path) -> Changeset:
    return plan_new_op(PytorchTree(root), SPEC)


def _mpsgen(*args: str, root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mpsgen", *args, "--root", str(root)], capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def trees(tmp_path_factory) -> tuple[Path, dict[str, bytes], dict[str, bytes]]:
    """A practice tree (with a .git folder), its files before, and after a whole apply."""
    base = tmp_path_factory.mktemp("journal") / "base"
    build_practice_tree(base, real=False)
    (base / ".git").mkdir(exist_ok=True)
    before = _state(base)
    done = base.parent / "done"
    import shutil

    shutil.copytree(base, done)
    _plan(done).apply(command="new-op heaviside")
    after = _state(done)
    assert after != before and not os.path.exists(journal_path(done))
    return base, before, after


def _killed_at(root: Path, *, rename: int | None = None, staged: int | None = None, changes: Changeset | None = None) -> None:
    """Apply the change in a forked child that dies (``os._exit``, as SIGKILL: nothing of its
    own runs) just before its ``rename``-th rename, or after staging ``staged`` files."""
    changes = changes or _plan(root)
    pid = os.fork()
    if pid == 0:  # the child
        try:
            if rename is not None:
                real_replace = os.replace
                count = [0]

                def replace(src, dst):
                    if str(src).endswith(".mpsgen") and not str(dst).endswith("mpsgen-journal.json"):
                        count[0] += 1
                        if count[0] == rename:
                            os._exit(9)
                    real_replace(src, dst)

                changeset_mod.os.replace = replace
            if staged is not None:
                real_keep = journal_mod.keep_old
                kept = [0]

                def keep(root_, entry):
                    real_keep(root_, entry)
                    kept[0] += 1
                    if kept[0] == staged:
                        os._exit(9)

                changeset_mod.keep_old = keep
            changes.apply(command="new-op heaviside")
        finally:
            os._exit(0)
    _pid, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 9, "the child was meant to die mid-apply"


def _leftovers(root: Path) -> list[str]:
    return [p.name for p in root.rglob("*") if ".mpsgen" in p.name]


# (a kill before every file was staged cannot be finished: test_resume_is_refused_when_...)
@pytest.mark.parametrize(
    ("how", "ending"),
    [(h, e) for h in ("rename-1", "rename-3", "rename-last", "staged-1", "staged-all") for e in ("--resume", "--abort")
     if (h, e) != ("staged-1", "--resume")],
)
def test_a_killed_apply_is_found_and_recovered(trees, tmp_path: Path, how: str, ending: str):
    import shutil

    base, before, after = trees
    root = tmp_path / "pytorch"
    shutil.copytree(base, root)
    n = len(_plan(root).changed)
    assert n >= 4
    kind, _dash, at = how.partition("-")
    step = {"1": 1, "3": 3, "last": n, "all": n}[at]
    _killed_at(root, **({"rename": step} if kind == "rename" else {"staged": step}))
    written = step - 1 if kind == "rename" else 0
    journal = Journal.find(root)
    assert journal is not None and journal.path.parent == root / ".git"
    assert [s.state for s in journal.states()].count("written") == written
    assert _leftovers(root)  # the staged and kept copies are there

    # the next writer refuses, naming the recovery
    res = _mpsgen("new-op", "heaviside", "--binary", "--integer", "--dry-run", root=root)
    assert res.returncode == 1, res.stderr
    assert f"{written} of {n} file(s) written" in res.stderr and "mpsgen recover --resume --root" in res.stderr
    assert "Traceback" not in res.stderr
    # plain check reports it, on every file of the change
    res = _mpsgen("check", root=root)
    assert res.returncode == 1 and res.stdout.count("MPS016 error") == n, res.stdout
    # recover lists the states, and changes nothing
    res = _mpsgen("recover", root=root)
    assert res.returncode == 1 and res.stdout.count("written") >= written and "not written" not in res.stdout
    res = _mpsgen("recover", ending, root=root)
    assert res.returncode == 0, res.stderr
    assert _state(root) == (after if ending == "--resume" else before)
    assert _leftovers(root) == [] and Journal.find(root) is None
    assert _mpsgen("recover", root=root).stderr.startswith("nothing to recover")


def test_resume_is_refused_when_the_new_content_was_not_staged(trees, tmp_path: Path):
    import shutil

    base, before, _after = trees
    root = tmp_path / "pytorch"
    shutil.copytree(base, root)
    _killed_at(root, staged=1)
    res = _mpsgen("recover", "--resume", root=root)
    assert res.returncode == 1 and "cannot be finished" in res.stderr and "recover --abort" in res.stderr
    assert Journal.find(root) is not None  # nothing decided: --abort still can
    assert _mpsgen("recover", "--abort", root=root).returncode == 0
    assert _state(root) == before and _leftovers(root) == []


def test_a_file_changed_after_the_kill_is_left_to_the_user(trees, tmp_path: Path):
    import shutil

    base, _before, _after = trees
    root = tmp_path / "pytorch"
    shutil.copytree(base, root)
    _killed_at(root, rename=2)
    journal = Journal.find(root)
    victim = root / journal.entries[0].path
    victim.write_bytes(victim.read_bytes() + b"\n// someone's edit\n")
    snapshot = _state(root)
    for flag in ("--resume", "--abort"):
        res = _mpsgen("recover", flag, root=root)
        assert res.returncode == 1 and "changed since" in res.stderr and journal.entries[0].path in res.stderr
        assert _state(root) == snapshot


def test_a_broken_journal_is_reported_not_a_traceback(tmp_path: Path):
    root = tmp_path / "pytorch"
    build_practice_tree(root, real=False)
    (root / ".git").mkdir(exist_ok=True)
    Path(journal_path(root)).write_text(json.dumps({"mpsgen_journal": 1, "files": [{"path": "../../etc/passwd"}]}))
    for args in (("recover", "--abort"), ("new-op", "heaviside", "--binary", "--integer")):
        res = _mpsgen(*args, root=root)
        assert res.returncode != 0 and "journal" in res.stderr and "Traceback" not in res.stderr, res.stderr


def test_without_a_git_folder_the_journal_sits_at_the_top(tmp_path: Path):
    root = tmp_path / "pytorch"
    build_practice_tree(root, real=False)
    assert not (root / ".git").exists()
    assert journal_path(root) == str(root / ".mpsgen-journal.json")
    (root / ".git").write_text("gitdir: elsewhere/.git/worktrees/x\n")
    (root / "elsewhere/.git/worktrees/x").mkdir(parents=True)
    assert journal_path(root) == str(root / "elsewhere/.git/worktrees/x/mpsgen-journal.json")


def test_a_created_file_is_journaled_and_rolled_back(trees, tmp_path: Path):
    import shutil

    base, before, _after = trees
    root = tmp_path / "pytorch"
    shutil.copytree(base, root)
    header = "aten/src/ATen/native/mps/kernels/NewThing.h"
    changes = _plan(root)
    changes.create(header, "#pragma once\n")
    # killed before the last rename of an edited file: everything staged, the new file (last) not there yet
    _killed_at(root, rename=len(changes.changed) - 1, changes=changes)
    assert {s.entry.path: s.state for s in Journal.find(root).states()}[header] == "pending"
    assert _mpsgen("recover", "--resume", root=root).returncode == 0
    assert (root / header).read_text() == "#pragma once\n" and Journal.find(root) is None
    # and rolled back: the created file goes
    journal = Journal.plan(root, "x", [(header, None, b"#pragma once\n")])
    journal.begin()
    assert {s.entry.path: s.state for s in journal.states()} == {header: "written"}
    assert _mpsgen("recover", "--abort", root=root).returncode == 0
    assert not (root / header).exists() and _leftovers(root) == [] and Journal.find(root) is None
    assert {k: v for k, v in _state(root).items()} != before  # (the rest of the change stays: it was finished)


def test_a_created_file_in_a_patch_and_an_apply(trees, tmp_path: Path):
    import shutil

    base, before, after = trees
    root = tmp_path / "pytorch"
    shutil.copytree(base, root)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    c = _plan(root)
    header = "aten/src/ATen/native/mps/kernels/NewThing.h"
    c.create(header, "#pragma once\nstruct X {};\n")
    diff = c.diff()
    assert f"diff --git a/{header} b/{header}\nnew file mode 100644\n--- /dev/null\n+++ b/{header}\n@@ -0,0 +1,2 @@\n" in diff
    (tmp_path / "p.patch").write_text(diff)
    res = subprocess.run(["git", "apply", "--check", str(tmp_path / "p.patch")], cwd=root, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    (root / header).write_text("someone else's\n")
    with pytest.raises(Exception, match="appeared since"):
        c.apply()
    (root / header).unlink()
    assert c.apply() and (root / header).read_text() == "#pragma once\nstruct X {};\n"
    assert {k: v for k, v in _state(root).items() if k != header} == after


def test_a_journal_cut_short_while_written_is_tidied_by_the_next_writer(trees, tmp_path: Path):
    import shutil

    base, _before, after = trees
    root = tmp_path / "pytorch"
    shutil.copytree(base, root)
    stale = Path(journal_path(root) + ".new")
    stale.write_text('{"mpsgen_journal": 1, "files": [')  # killed mid-write: the tree was not touched
    assert _mpsgen("check", root=root).returncode in (0, 1) and "MPS016" not in _mpsgen("check", root=root).stdout
    assert _mpsgen("new-op", "heaviside", "--binary", "--integer", "--dry-run", root=root).returncode == 0
    assert stale.exists()  # a dry run writes nothing, not even this
    _plan(root).apply(command="new-op heaviside")
    assert not stale.exists() and _state(root) == after and _leftovers(root) == []


def test_recover_removes_a_journal_cut_short_while_written(tmp_path: Path):
    root = tmp_path / "pytorch"
    build_practice_tree(root, real=False)
    stale = Path(journal_path(root) + ".new")
    stale.write_text('{"mpsgen_journal": 1, "fi')
    res = _mpsgen("recover", root=root)
    assert res.returncode == 0 and "removed" in res.stderr and not stale.exists(), res.stderr
    assert _mpsgen("recover", root=root).stderr.startswith("nothing to recover")


def test_a_live_write_is_not_an_interrupted_one(trees, tmp_path: Path, monkeypatch, capsys):
    """A writer paused before its second rename (alive, holding the lock, its journal on
    disk): `recover` and a second writer wait, then refuse naming it (pid), and touch nothing;
    `check` reports no MPS016; once it goes on, it finishes whole and says so (exit 0)."""
    import shutil

    from typer.testing import CliRunner

    from mpsgen.cli.app import app
    from mpsgen.cli.check import main as check_main

    base, before, after = trees
    root = tmp_path / "pytorch"
    shutil.copytree(base, root)
    changes = _plan(root)
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the first writer
        try:
            real_replace, count = os.replace, [0]

            def replace(src, dst):
                if str(src).endswith(".mpsgen") and not str(dst).endswith("mpsgen-journal.json"):
                    count[0] += 1
                    if count[0] == 2:
                        os.read(go_r, 1)  # paused, alive, until the test lets it go on
                real_replace(src, dst)

            changeset_mod.os.replace = replace
            changes.apply(command="new-op heaviside")
            os._exit(0)
        except BaseException:
            os._exit(1)
    try:
        import time

        journal = Path(journal_path(root))
        changed = [k for k in after if before.get(k) != after[k]]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(_state(root).get(k) == after[k] for k in changed):
            time.sleep(0.01)  # (until its first rename: it pauses before the second)
        time.sleep(0.1)
        assert journal.exists() and Journal.find(root).pid == pid
        mid = _state(root)
        monkeypatch.setattr(journal_mod, "WRITER_WAIT", 0.3)
        runner = CliRunner()
        for args in (["recover", "--resume"], ["recover", "--abort"], ["recover"], ["new-op", "heaviside", "--dry-run"]):
            res = runner.invoke(app, [*args, "--root", str(root)])
            assert res.exit_code == 1, (args, res.output)
            assert f"another mpsgen (pid {pid}, `mpsgen new-op heaviside`)" in res.output, (args, res.output)
            assert "not an interrupted one" in res.output and "interrupted while writing" not in res.output
            assert _state(root) == mid
        assert journal_mod.live_writer(root) == f"another mpsgen (pid {pid}, `mpsgen new-op heaviside`)"
        capsys.readouterr()
        check_main(["--root", str(root), "--select", "MPS016"])
        assert "MPS016" not in capsys.readouterr().out
    finally:
        os.write(go_w, b"x")
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert _state(root) == after and not journal.exists()
    assert journal_mod.live_writer(root) is None


def test_a_dead_writers_journal_is_recovered_at_once(trees, tmp_path: Path, monkeypatch):
    """The lock dies with its process: a killed writer's journal is recovered without a wait."""
    import shutil
    import time

    base, before, after = trees
    root = tmp_path / "pytorch"
    shutil.copytree(base, root)
    _killed_at(root, rename=2)
    assert journal_mod.live_writer(root) is None
    monkeypatch.setattr(journal_mod, "WRITER_WAIT", 30)
    t0 = time.monotonic()
    res = _mpsgen("recover", "--resume", root=root)
    assert res.returncode == 0 and time.monotonic() - t0 < 20, res.stderr
    assert _state(root) == after
