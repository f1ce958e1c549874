"""Apply is all-or-nothing under SIGINT/SIGTERM: a `mpsgen new-op` process is signalled at
random moments (200 runs, two at a time), and each tree is then either untouched or fully
changed, with no temporary file left."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from mpsgen.report.practice import build_practice_tree
from tests.conftest import REAL

RUNS = 200
ARGS = ["new-op", "heaviside", "--binary", "--integer"]


def _state(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _start(root: Path) -> subprocess.Popen:
    # stderr goes to a file, not a pipe: a pipe nobody drains until exit blocks a chatty child
    log = open(root.parent / f"{root.name}.stderr", "w+b")
    return subprocess.Popen(
        [sys.executable, "-m", "mpsgen", *ARGS, "--root", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=log,
        env={**os.environ, "PYTHONFAULTHANDLER": "1"},
        stdin=subprocess.DEVNULL,
    )


def _stderr(root: Path) -> str:
    return (root.parent / f"{root.name}.stderr").read_bytes().decode("utf-8", "replace")


def _pair_runtime(base: Path, trees: list[Path]) -> float:
    """How long two runs side by side take now (the signals' window is drawn from it): measured
    under the same load as the signalled runs, since one run alone on a busy machine says too
    little (under load every signal once landed before the apply, 200 untouched, 0 applied)."""
    for tree in trees:
        shutil.rmtree(tree, ignore_errors=True)
        shutil.copytree(base, tree)
    t0 = time.perf_counter()
    procs = [(tree, _start(tree)) for tree in trees]
    ends = []
    for tree, proc in procs:
        assert proc.wait(timeout=120) == 0, _stderr(tree)
        ends.append(time.perf_counter() - t0)
    return max(ends)


def test_signals_at_random_points_leave_all_or_nothing(tmp_path: Path):
    base, _ = build_practice_tree(tmp_path / "base", real=False)
    before = _state(base)
    done_tree = tmp_path / "done"
    shutil.copytree(base, done_tree)
    proc = _start(done_tree)
    assert proc.wait(timeout=120) == 0, _stderr(done_tree)
    after = _state(done_tree)
    assert after != before

    rng = random.Random(20261124)
    trees = [tmp_path / "t0", tmp_path / "t1"]
    outcomes = {"untouched": 0, "applied": 0}
    for start in range(0, RUNS, 2):
        if start % 40 == 0:  # the window follows the machine's load through the trial
            runtime = _pair_runtime(base, trees)
        running = []
        for tree in trees:
            shutil.rmtree(tree, ignore_errors=True)
            shutil.copytree(base, tree)
            running.append((tree, _start(tree), rng.uniform(0, runtime * 1.1), rng.choice([signal.SIGINT, signal.SIGTERM])))
        t = time.perf_counter()
        for tree, proc, delay, sig in sorted(running, key=lambda r: r[2]):
            wait = delay - (time.perf_counter() - t)
            if wait > 0:
                time.sleep(wait)
            if proc.poll() is None:
                proc.send_signal(sig)
        for tree, proc, _delay, sig in running:
            try:
                code = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGABRT)
                proc.wait()
                raise AssertionError(f"hung after {sig!r}: {_stderr(tree)[-5000:]}") from None
            err = _stderr(tree)
            assert len(err) < 20_000, err[:3000]
            # a signal during the interpreter's own start-up (site, .pth files) may print its
            # traceback before any mpsgen code runs; one through mpsgen's code is a defect
            assert "Traceback" not in err or "/mpsgen/" not in err, err
            state = _state(tree)
            leftovers = [name for name in state if name.endswith(".mpsgen")]
            assert not leftovers, (sig, leftovers)
            if state == before:
                outcomes["untouched"] += 1
            else:
                assert state == after, f"half-applied after {sig!r} (exit {code}): {err}"
                outcomes["applied"] += 1
    assert sum(outcomes.values()) == RUNS
    assert outcomes["untouched"] and outcomes["applied"], outcomes  # both sides of the window were hit


def test_a_file_size_limit_mid_staging_writes_nothing_and_leaves_no_temp_file(tmp_path: Path):
    """`ulimit -f`: the small kernel files stage, native_functions.yaml (~600 KB) does not."""
    import resource

    from mpsgen.tree import NATIVE_FUNCTIONS

    root, _ = build_practice_tree(tmp_path / "pytorch", sources=REAL)
    assert (root / NATIVE_FUNCTIONS).stat().st_size > 200_000
    before = _state(root)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))

    proc = subprocess.run(
        [sys.executable, "-m", "mpsgen", *ARGS, "--root", str(root)],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, preexec_fn=limit, timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert "could not stage the edits" in proc.stderr and "nothing was written" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert _state(root) == before  # no file changed, no temporary file left


def test_an_interrupt_after_the_renames_says_the_change_is_complete(real_tree: Path, monkeypatch, capsys):
    """Ctrl-C between the last rename and the end of the report: exit 130, and the message says
    the change is complete (never 'nothing written')."""
    import mpsgen.cli.app
    import mpsgen.cli.change

    def interrupted(_changeset, *_given):
        raise KeyboardInterrupt

    monkeypatch.setattr(mpsgen.cli.change, "print_next_steps", interrupted)
    monkeypatch.setattr(sys, "argv", ["mpsgen", "new-op", "heaviside", "--root", str(real_tree)])
    before = _state(real_tree)
    try:
        mpsgen.cli.app.main()
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 130 and f"interrupted after the change was applied (5 file(s) in {real_tree}): it is complete." in err, err
    assert "nothing written" not in err and _state(real_tree) != before


def test_an_interrupt_right_after_the_last_rename_says_complete_and_keeps_the_side_file(real_tree: Path, tmp_path: Path, monkeypatch, capsys):
    """An interrupt landing once the last rename is done but before apply returns (here raised
    as the journal is dropped): what is on disk decides the message, and --with-test's file,
    which belongs to the change, stays."""
    import mpsgen.cli.app
    from mpsgen.patch.journal import Journal

    real_end = Journal.end

    def end_then_interrupted(self):
        real_end(self)
        raise KeyboardInterrupt

    monkeypatch.setattr(Journal, "end", end_then_interrupted)
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setattr(sys, "argv", ["mpsgen", "new-op", "heaviside", "--with-test", "--root", str(real_tree)])
    before = _state(real_tree)
    with __import__("pytest").raises(SystemExit) as done:
        mpsgen.cli.app.main()
    err = capsys.readouterr().err
    assert done.value.code == 130, err
    assert f"interrupted after the change was applied (5 file(s) in {real_tree}): it is complete." in err, err
    assert "nothing written" not in err and _state(real_tree) != before
    assert (work / "test_heaviside_shader.py").is_file()  # the change's side file is kept


def test_sigterm_and_sighup_while_planning_exit_130_with_a_message(own_tree: Path):
    """Outside the write window too: a SIGTERM or SIGHUP ends mpsgen as Ctrl-C does."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        proc = subprocess.Popen(
            [sys.executable, "-c", "import sys, time\nimport mpsgen.cli.app\nsys.argv = ['mpsgen', 'new-op', 'heaviside', '--dry-run', "
             f"'--root', {str(own_tree)!r}]\nimport mpsgen.plan.newop\nmpsgen.plan.newop.plan_new_op = lambda *a, **k: time.sleep(60)\n"
             "print('planning', flush=True)\nfrom mpsgen.__main__ import main\nmain()"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        )
        assert proc.stdout.readline() == b"planning\n"
        time.sleep(0.5)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130 and err == b"interrupted; nothing written.\n", (sig, proc.returncode, err)
