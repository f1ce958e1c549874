"""`mpsgen try` of the shipped reduction specs (prod_stub, std_var_stub), as whole processes
(start-up and torch's import included): every case of every registered (input, output) pair,
one threadgroup per output element run as fibers. Target (issue 31): a cached build <= 3 s
median; the first, compiling run is shown beside it.

    python benchmarks/bench_try_reduction.py [--repeat N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.timing import installed_cli, verdict  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    opts = ap.parse_args()
    with installed_cli() as run:
        for op in ("prod", "var"):
            cold = run(["try", op], 1, warm=False)
            warm = run(["try", op], opts.repeat)
            print(f"try {op}, compiled: {cold[0] * 1000:.0f} ms (one run)")
            verdict(f"try {op}, cached build", warm, 3000)


if __name__ == "__main__":
    main()
