"""Children mpsgen starts (mpsgen/core/child.py): a compile that cannot finish leaves no process
behind, whatever ends it (its time limit, SIGTERM, SIGINT or SIGHUP of mpsgen, an exception); its memory is bounded;
a timeout is remembered for the same source; a functor too large to compile is refused first."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mpsgen.core import child
from mpsgen.shim import gate as compile_gate, toolchain, trial
from mpsgen.report.practice import build_practice_tree
from tests.hostile_cases import RUNAWAY_FUNCTOR, SPIN, Watch, descendants, still_running

needs_compiler = pytest.mark.skipif(compile_gate.find_compiler() is None, reason="no C++ compiler on PATH")

RUNAWAY_CPP = SPIN.replace("static ", "") + "constexpr long forever = spin();\nint main() { return forever > 0; }\n"


@needs_compiler
def test_a_compile_past_its_time_limit_leaves_no_process_and_is_remembered(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(toolchain, "COMPILE_TIME_LIMIT", 1.5)
    shim = "// the shim\n"
    with Watch(os.getpid()) as watch:
        code, stderr, cached = toolchain.syntax_only_compile(RUNAWAY_CPP, shim, compile_gate.find_compiler())
    assert code == 1 and "did not finish within 2 s" in stderr and not cached, stderr
    assert "cc1plus" in watch.seen.values(), watch.seen  # the compiler proper ran, under the driver
    time.sleep(0.2)
    assert not still_running(watch.seen), f"left running: {still_running(watch.seen)}"
    t0 = time.monotonic()
    code, stderr, cached = toolchain.syntax_only_compile(RUNAWAY_CPP, shim, compile_gate.find_compiler())
    assert cached and code == 1 and "an earlier run on this same source" in stderr and "delete that file" in stderr
    assert time.monotonic() - t0 < 1.0


@needs_compiler
def test_try_remembers_a_build_that_ran_out_of_time(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(toolchain, "BUILD_TIME_LIMIT", 1.5)
    (tmp_path / "driver.cpp").write_text(RUNAWAY_CPP)
    binary = tmp_path / "program"
    argv = [compile_gate.find_compiler(), "-std=c++17", "-O1", "-o", str(binary), str(tmp_path / "driver.cpp")]
    with Watch(os.getpid()) as watch, pytest.raises(trial.Refused, match="did not finish within 2 s"):
        toolchain.compile_program(argv, binary, "spin_functor", "spec.yaml")
    time.sleep(0.2)
    assert "cc1plus" in watch.seen.values() and not still_running(watch.seen)
    t0 = time.monotonic()
    with pytest.raises(trial.Refused, match="remembered from an earlier run on this same source"):
        toolchain.compile_program(argv, binary, "spin_functor", "spec.yaml")
    assert time.monotonic() - t0 < 1.0


@pytest.mark.skipif(not child.BOUNDS_SPACE, reason="the address-space bound is Linux's")
def test_a_child_past_its_memory_bound_fails_instead_of_growing(tmp_path: Path):
    grab = "b = bytearray(600 << 20); print('grew')"
    proc = child.run([sys.executable, "-c", grab], timeout=60, memory=300 << 20, text=True)
    assert proc.returncode != 0 and "MemoryError" in proc.stderr and "grew" not in proc.stdout


def test_an_exception_while_waiting_kills_the_group(monkeypatch):
    """Any way out of the wait (here an interrupt) kills what the child started too."""
    script = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    real = subprocess.Popen.communicate

    def interrupted(self, *args, **kwargs):
        deadline = time.monotonic() + 30
        # (until the watch, which samples every 20 ms, has seen the child and what it started:
        # on a loaded machine its first sample may come after the grandchild is there)
        while (len(descendants(self.pid)) < 1 or len(watch.seen) < 2) and time.monotonic() < deadline:
            time.sleep(0.02)
        raise KeyboardInterrupt

    monkeypatch.setattr(subprocess.Popen, "communicate", interrupted)
    with Watch(os.getpid()) as watch, pytest.raises(KeyboardInterrupt):
        child.run([sys.executable, "-c", script], timeout=60)
    monkeypatch.setattr(subprocess.Popen, "communicate", real)
    time.sleep(0.2)
    assert len(watch.seen) == 2 and not still_running(watch.seen), watch.seen


@needs_compiler
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_mpsgen_signalled_mid_compile_exits_130_and_leaves_no_compiler(tmp_path: Path, sig):
    root, _ = build_practice_tree(tmp_path / "pytorch", real=False)
    functor = tmp_path / "spin.h"
    functor.write_text(RUNAWAY_FUNCTOR)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mpsgen", "new-op", "heaviside", "--binary", "--integer", "--functor-file", str(functor), "--root", str(root)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env, cwd=tmp_path,
    )
    try:
        with Watch(proc.pid) as watch:
            deadline = time.monotonic() + 120
            while "cc1plus" not in watch.seen.values() and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert "cc1plus" in watch.seen.values(), proc.communicate(timeout=60)
            time.sleep(0.3)  # (well inside the compile)
            proc.send_signal(sig)
            out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    time.sleep(0.2)
    assert proc.returncode == 130 and b"interrupted; nothing written." in err, (proc.returncode, err)
    assert b"Traceback" not in err
    assert not still_running(watch.seen), f"left running after {sig.name}: {still_running(watch.seen)}"


def test_a_functor_too_large_to_compile_is_refused_before_compiling(own_tree: Path, run, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    expr = "a" + " + a" * 25_000  # 100 KB
    res = run("new-op", "heaviside", "--binary", "--integer", "--expr", expr, "--root", own_tree)
    assert res.exit_code == 2, res.output
    assert f"--expr: the functor is {len(expr)} bytes, over the 32768 bytes (32 KiB) mpsgen compiles; nothing written." in res.output
    assert not (tmp_path / "cache" / "mpsgen" / "gate").exists()  # nothing compiled
