"""Median wall time of a `new-op` dry run on the real torch 2.13 files, beside the naive
baseline (whole-file ruamel round trip of native_functions.yaml + whole-file libcst parse of
common_methods_invocations.py) measured in the same run.

    python benchmarks/bench_new_op.py [--repeat N] [--baseline-repeat M]

Target (issue 25): `mpsgen new-op heaviside --spec specs/heaviside.yaml --dry-run` (planning
every edit, OpInfo and test lists included, and rendering the diff), whole process with the
functor compile cache warm, <= 0.5 s median; the first compile is bench_compile_gate.py's.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.timing import installed_cli, real_practice_tree, time_it, verdict  # noqa: E402
from mpsgen.plan.newop import plan_new_op  # noqa: E402
from mpsgen.core.resources import resource_dir  # noqa: E402
from mpsgen.spec.op import FunctorSource, OpSpec, load_spec  # noqa: E402
from mpsgen.tree import COMMON_METHODS, NATIVE_FUNCTIONS, PytorchTree  # noqa: E402

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

        # the command a user runs: interpreter start-up and imports included
        spec_file = resource_dir("specs") / "heaviside.yaml"
        shipped = load_spec(spec_file)
        in_process = time_it(lambda: plan_new_op(PytorchTree(root), shipped).diff(), args.repeat)
        with installed_cli() as run:
            samples = run(["new-op", "heaviside", "--spec", spec_file, "--dry-run", "--root", root], args.repeat)
        verdict("new-op heaviside --dry-run", samples, 500, in_process)

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

        try:
            import libcst  # noqa: F401  (the naive baseline's tools; mpsgen itself uses neither)
            import ruamel.yaml  # noqa: F401
        except ImportError:
            print("naive baseline: skipped (pip install ruamel.yaml libcst to measure it)")
            return
        r = time_it(ruamel_round_trip, args.baseline_repeat)
        c = time_it(libcst_parse, args.baseline_repeat)
        print(f"naive baseline: ruamel round trip of native_functions.yaml median {statistics.median(r):.2f} s (n={len(r)})")
        print(f"naive baseline: libcst parse of common_methods_invocations.py median {statistics.median(c):.2f} s (n={len(c)})")
        print(f"naive baseline total: {statistics.median(r) + statistics.median(c):.2f} s")


if __name__ == "__main__":
    main()
