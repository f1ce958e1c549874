"""The five everyday commands on a tree the size of an upstream checkout (issue 32, item 4).

The tree is bench_check.py's realistic one (:func:`benchmarks.bench_check.build_tree`): torch
2.13's real native_functions.yaml, test lists, OpInfo files, torchgen and AOTI files, ~70
real-size ``.mm`` and ~120 ``.metal`` files, and 182 native ``.cpp`` files of upstream's size.
Each command runs as a user's ``pip install`` runs it (bytecode compiled, the functor compile
cache warm), whole process, median against its target; in-process medians beside, with a
fresh :class:`PytorchTree` per sample (files read anew, this process's imports warm).

    python benchmarks/bench_upstream.py [--runs N] [--only explain,coverage,...] [--against DIR]

``--against DIR`` times another mpsgen checkout (e.g. ``git archive`` of an older commit) in
the same run, its samples interleaved with this checkout's, so both see the same load of a
shared machine: before/after figures.

Targets: ``explain heaviside``, ``new-op heaviside --dry-run`` and ``migrate-from-mpsgraph
acosh --dry-run`` <= 0.5 s; ``coverage`` <= 0.8 s; ``check`` not slower than before (measure
with ``--against``).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_check import build_tree  # noqa: E402
from benchmarks.timing import time_it  # noqa: E402
from mpsgen.core.resources import resource_dir  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TARGETS_MS = {"explain": 500, "new-op": 500, "migrate": 500, "coverage": 800}


def install(repo: Path, dest: Path, cache: Path) -> dict[str, str]:
    """mpsgen of ``repo`` copied to ``dest`` with its bytecode compiled (as ``pip install``
    leaves it), and the environment that runs it, with a cache folder of its own."""
    for name in ("mpsgen", "templates", "specs"):
        shutil.copytree(repo / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(dest / "mpsgen")], check=True, capture_output=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(dest)
    env["XDG_CACHE_HOME"] = str(cache)
    return env


def commands(root: Path) -> dict[str, tuple[list, tuple[int, ...], object]]:
    """name -> (command line, exit statuses that are fine, in-process call)."""
    from mpsgen.check import run_check
    from mpsgen.report.explain import coverage, explain_op
    from mpsgen.plan.migrate import plan_migrate
    from mpsgen.plan.newop import plan_new_op
    from mpsgen.spec.op import load_spec
    from mpsgen.tree import PytorchTree

    heaviside = resource_dir("specs") / "heaviside.yaml"
    acosh = load_spec(resource_dir("specs") / "acosh.yaml")
    return {
        "explain": (["explain", "heaviside", "--root", root], (0,), lambda: explain_op(PytorchTree(root), "heaviside")),
        "new-op": (
            ["new-op", "heaviside", "--spec", heaviside, "--dry-run", "--root", root],
            (0,),
            lambda: plan_new_op(PytorchTree(root), load_spec(heaviside)).diff(),
        ),
        "migrate": (["migrate-from-mpsgraph", "acosh", "--dry-run", "--root", root], (0,), lambda: plan_migrate(PytorchTree(root), acosh).diff()),
        "coverage": (["coverage", "--root", root], (0,), lambda: coverage(PytorchTree(root))),
        "check": (["check", "--root", root], (0, 1), lambda: run_check(PytorchTree(root))),
    }


def timed(cmd: list[str], ok: tuple[int, ...], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of ``cmd``: the CPU time (user + system, the process and
    what it waited for) moves less than the wall time with the load of a shared machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    # (run from the install's folder: Python puts the working folder first on the path, and
    # from a checkout's top `python -m mpsgen` would import the checkout, not the install)
    proc = subprocess.run(cmd, capture_output=True, env=env, cwd=env["PYTHONPATH"])
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.decode()[-500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:5.0f} ms (fastest {min(samples) * 1000:4.0f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--only", default="", help="comma-separated subset of: explain,new-op,migrate,coverage,check")
    ap.add_argument("--no-in-process", action="store_true", help="whole processes only")
    ap.add_argument("--no-whole", action="store_true", help="in-process only")
    ap.add_argument("--tree", type=Path, help="time this tree (one this script built before) instead of building one")
    ap.add_argument("--against", type=Path, help="another mpsgen checkout, timed in the same run (interleaved)")
    opts = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mpsgen-upstream-"))
    try:
        root = opts.tree.resolve() if opts.tree else build_tree(tmp / "pytorch", 70, 120, 21.0, 8.5)
        cases = commands(root)
        chosen = [c for c in opts.only.split(",") if c] or list(cases)
        envs = {"this": install(REPO, tmp / "this", tmp / "cache-this")}
        if opts.against:
            envs["against"] = install(opts.against.resolve(), tmp / "against", tmp / "cache-against")
        for name in chosen:
            args, ok, call = cases[name]
            cmd = [sys.executable, "-m", "mpsgen", *map(str, args)]
            line = f"{name:<9}"
            if not opts.no_whole:
                samples: dict[str, list[float]] = {k: [] for k in envs}
                cpu: dict[str, list[float]] = {k: [] for k in envs}
                for env in envs.values():  # warm: the compile cache, the page cache
                    timed(cmd, ok, env)
                for _ in range(opts.runs):
                    for k, env in envs.items():
                        wall, used = timed(cmd, ok, env)
                        samples[k].append(wall)
                        cpu[k].append(used)
                median = statistics.median(samples["this"]) * 1000
                line += f" whole process {_ms(samples['this'])}, CPU {_ms(cpu['this'])}"
                if name in TARGETS_MS:
                    line += f" target <= {TARGETS_MS[name]} ms: {'ok' if median <= TARGETS_MS[name] else 'MISSED'}"
                if "against" in samples:
                    line += f"   against: {_ms(samples['against'])}, CPU {_ms(cpu['against'])}"
            if not opts.no_in_process:
                call()  # this process's imports warm
                line += f"   in-process {_ms(time_it(call, opts.runs))}"
            print(line, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
