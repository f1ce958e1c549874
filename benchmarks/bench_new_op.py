"""Median wall time of a `new-op` dry run on the real torch 2.13 files, beside the naive
baseline (whole-file ruamel round trip of native_functions.yaml + whole-file libcst parse of
common_methods_invocations.py) measured in the same run.

    python benchmarks/bench_new_op.py [--repeat N] [--baseline-repeat M]

Target: the dry run (planning every edit, OpInfo included, and rendering the diff) <= 1 s median.
"""

from __future__ import annotations

import argparse
import io
import statistics

from mpsgen.newop import plan_new_op
from timing import median_ms, real_practice_tree, time_cli, time_it
from mpsgen.spec import FunctorSource, OpSpec
from mpsgen.tree import COMMON_METHODS, NATIVE_FUNCTIONS, PytorchTree

CASES = [
    OpSpec("heaviside", "binary", FunctorSource(expr="a"), ("integer",)),
    OpSpec("special_ndtri", "unary", FunctorSource(expr="x"), ("int2float",)),
]



def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--baseline-repeat", type=int, default=3)
    args = ap.parse_args()
    with real_practice_tree() as root:
        for spec in CASES:
            def dry_run(spec=spec):
                changeset = plan_new_op(PytorchTree(root), spec)  # fresh tree: files read anew
                assert changeset.diff()

            samples = time_it(dry_run, args.repeat)
            print(f"new-op {spec.name} --dry-run, planned in-process: median {statistics.median(samples) * 1000:.0f} ms (n={len(samples)})")

        # the same through the console script: interpreter start and imports included
        samples = time_cli(["new-op", "heaviside", "--binary", "--integer", "--dry-run", "--root", str(root)], args.repeat)
        print(f"`mpsgen new-op heaviside --binary --integer --dry-run` wall clock: {median_ms(samples)}")

        yaml_text = (root / NATIVE_FUNCTIONS).read_text()
        cmi_text = (root / COMMON_METHODS).read_text()

        def ruamel_round_trip():
            from ruamel.yaml import YAML

            y = YAML()
            y.preserve_quotes = True
            y.width = 1000
            y.boolean_representation = ["False", "True"]
            buf = io.StringIO()
            y.dump(y.load(yaml_text), buf)

        def libcst_parse():
            import libcst

            libcst.parse_module(cmi_text)

        r = time_it(ruamel_round_trip, args.baseline_repeat)
        c = time_it(libcst_parse, args.baseline_repeat)
        print(f"naive baseline: ruamel round trip of native_functions.yaml median {statistics.median(r):.2f} s (n={len(r)})")
        print(f"naive baseline: libcst parse of common_methods_invocations.py median {statistics.median(c):.2f} s (n={len(c)})")
        print(f"naive baseline total: {statistics.median(r) + statistics.median(c):.2f} s")


if __name__ == "__main__":
    main()
