"""tree.forked: jobs run in a child process; any failure gives None, never a wrong result."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from mpsgen.tree.forked import Forked, usable_cpus

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or usable_cpus() < 2, reason="no os.fork here, or one CPU: no child is started")


def _square(n: int) -> int:
    return n * n


def _big(n: int) -> dict:
    return {f"name{i}": [(i, i * 7), (i + 1, 3)] for i in range(n)}


def _fail() -> None:
    raise RuntimeError("job failed")


def _kill_self() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def test_results_come_back_in_job_order_and_larger_than_a_pipe():
    job = Forked.start([(_square, (7,)), (_big, (20000,)), (_square, (3,))])
    assert job is not None
    assert job.result(2) == 9  # a later job first: the earlier ones are read on the way
    assert job.result(0) == 49
    assert job.result(1) == _big(20000)  # ~700 KB through a 64 KB pipe
    assert job.result(1) == _big(20000)  # asked again: the same


def test_a_failing_job_is_left_to_the_caller_and_the_next_ones_still_run():
    job = Forked.start([(_square, (2,)), (_fail, ()), (_square, (5,))])
    assert (job.result(0), job.result(1), job.result(2)) == (4, None, 25)


def test_a_killed_child_gives_none():
    job = Forked.start([(_kill_self, ()), (_square, (5,))])
    assert (job.result(0), job.result(1)) == (None, None)


def test_an_unmarshallable_or_too_large_result_gives_none(monkeypatch):
    job = Forked.start([(lambda: object(), ()), (_square, (5,))])
    assert (job.result(0), job.result(1)) == (None, 25)
    monkeypatch.setattr("mpsgen.tree.forked.CAPACITY", 1 << 16)
    job = Forked.start([(_big, (100,)), (_big, (20000,)), (_square, (6,))])  # ~3 KB, ~700 KB, fits
    assert job.result(0) == _big(100) and job.result(1) is None and job.result(2) == 36


def test_results_are_published_as_they_come():
    """A result is read while the child still works on the next job (none waits for the
    parent to read: a large result does not fill a pipe)."""
    import time

    job = Forked.start([(_big, (20000,)), (_sleep, ())])
    start = time.monotonic()
    assert job.result(0) == _big(20000) and time.monotonic() - start < 5
    job.close()


def test_no_fork_while_other_threads_run():
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert Forked.start([(_square, (2,))]) is None
    finally:
        stop.set()
        t.join()
    assert Forked.start([]) is None


def test_the_child_is_reaped():
    """Reaped by close() at the latest; the last result does not wait for the child's exit."""
    job = Forked.start([(_square, (2,))])
    pid = job._pid
    assert job.result(0) == 4
    job.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    job.close()  # twice: nothing left to do
    failed = Forked.start([(_fail, ())])
    pid = failed._pid
    assert failed.result(0) is None
    failed.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _sleep() -> None:
    import time

    time.sleep(30)


def test_close_stops_a_child_still_working_and_reaps_it():
    import time

    job = Forked.start([(_sleep, ())])
    pid = job._pid
    start = time.monotonic()
    job.close()
    assert time.monotonic() - start < 5
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    assert job.result(0) is None


def test_the_child_does_not_hold_the_callers_output(tmp_path):
    """A caller waiting for the parent's stdout to close (pre-commit, a shell pipe) does not
    wait for the child: the child's 0, 1, 2 are /dev/null."""
    import subprocess
    import sys
    import time
    from pathlib import Path

    code = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from mpsgen.tree.forked import Forked\n"
        "import time\n"
        "job = Forked.start([(time.sleep, (4,))])\n"
        "print('parent done', flush=True)\n"
        "import os; os._exit(0)\n"
    )
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-c", code, str(Path(__file__).resolve().parents[2])], capture_output=True, text=True, timeout=30)
    assert out.stdout == "parent done\n" and time.monotonic() - start < 3.5


def test_no_child_with_one_cpu(monkeypatch):
    monkeypatch.setattr("mpsgen.tree.forked.usable_cpus", lambda: 1)
    assert Forked.start([(_square, (2,))]) is None
