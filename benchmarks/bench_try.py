"""`mpsgen try`: one spec (cold: compiled; warm: the cached build) and the whole shipped spec
library, as whole processes (what a contributor or CI pays: start-up and torch's import
included). Targets: one spec with a cached build <= 2 s median (issue 25), compiled <= 3 s;
the library <= 2 minutes on 2 cores.

    python benchmarks/bench_try.py [--repeat N] [--op heaviside]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.timing import installed_cli, verdict  # noqa: E402
from mpsgen.core.resources import resource_dir  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--op", default="heaviside")
    opts = ap.parse_args()
    with installed_cli() as run:
        cold = run(["try", opts.op], opts.repeat, (0, 1), warm=False)
        warm = run(["try", opts.op], opts.repeat, (0, 1))
    verdict(f"try {opts.op}, compiled", cold, 3000)
    verdict(f"try {opts.op}, cached build", warm, 2000)
    with tempfile.TemporaryDirectory() as cache:
        specs = sorted(p.stem for p in resource_dir("specs").glob("*.yaml"))
        env = {**os.environ, "XDG_CACHE_HOME": f"{cache}/library"}
        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=2) as pool:  # CI's 2 cores
            codes = list(pool.map(lambda s: subprocess.run([sys.executable, "-m", "mpsgen", "try", s], env=env, capture_output=True).returncode, specs))
        total = time.perf_counter() - t0
        print(f"library: {len(specs)} specs in {total:.1f} s on 2 workers (cold cache), exit codes {sorted(set(codes))}  target <= 120 s")


if __name__ == "__main__":
    main()
