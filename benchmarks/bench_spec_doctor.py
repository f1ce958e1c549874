"""`mpsgen spec validate` and `mpsgen doctor`, whole processes, on a practice tree of torch
2.13's real files. Targets (issue 25): <= 0.5 s median each, the functor compile cache warm
(spec validate compiles a spec's functor; doctor validates native_functions.yaml and
common_mps.py and asks the compiler for its version).

    python benchmarks/bench_spec_doctor.py [--repeat N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.timing import installed_cli, median_ms, real_practice_tree, verdict  # noqa: E402
from mpsgen.core.resources import resource_dir  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    opts = ap.parse_args()
    specs = resource_dir("specs")
    with real_practice_tree() as root, installed_cli() as run:
        verdict("spec validate", run(["spec", "validate", specs / "heaviside.yaml"], opts.repeat), 500)
        library = sorted(specs.glob("*.yaml"))
        print(f"spec validate (the {len(library)} shipped specs)       whole process {median_ms(run(['spec', 'validate', *library], opts.repeat))}")
        verdict("doctor", run(["doctor", "--root", root], opts.repeat), 500)


if __name__ == "__main__":
    main()
