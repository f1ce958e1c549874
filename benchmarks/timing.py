"""Timing helpers shared by the benchmark scripts (run them as `python benchmarks/<name>.py`)."""

from __future__ import annotations

import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Callable


def time_it(fn: Callable[[], object], repeat: int) -> list[float]:
    """Wall-clock seconds of ``repeat`` calls."""
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return samples


def time_cli(args: list[str], repeat: int) -> list[float]:
    """Wall-clock seconds of running ``python -m mpsgen.cli ARGS`` (start-up and imports included)."""
    cmd = [sys.executable, "-m", "mpsgen.cli", *args]
    return time_it(lambda: subprocess.run(cmd, check=True, capture_output=True), repeat)


def median_ms(samples: list[float]) -> str:
    return f"median {statistics.median(samples) * 1000:.0f} ms (n={len(samples)})"


@contextlib.contextmanager
def real_practice_tree() -> Iterator[Path]:
    """A practice tree holding the real torch 2.13 files, in a temporary folder."""
    from mpsgen.practice import build_practice_tree

    with tempfile.TemporaryDirectory() as tmp:
        root, real = build_practice_tree(Path(tmp) / "pytorch")
        if not real:
            raise SystemExit("install torch==2.13.0: the benchmark runs on its real files")
        yield root
