"""Timing helpers shared by the benchmark scripts (run them as `python benchmarks/<name>.py`)."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
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
