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


def time_cli(args: list[str], repeat: int, ok: tuple[int, ...] = (0,)) -> list[float]:
    """Wall-clock seconds of running ``python -m mpsgen ARGS`` (what the ``mpsgen`` script
    runs: start-up and imports included); an exit status outside ``ok`` is an error."""
    return time_process([sys.executable, "-m", "mpsgen", *args], repeat, ok)


def time_process(
    cmd: list[str], repeat: int, ok: tuple[int, ...] = (0,), env: dict[str, str] | None = None, cwd: str | None = None
) -> list[float]:
    def once() -> None:
        proc = subprocess.run(cmd, capture_output=True, env=env, cwd=cwd)
        if proc.returncode not in ok:
            raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.decode()[-500:]}")

    return time_it(once, repeat)


def median_ms(samples: list[float]) -> str:
    return f"median {statistics.median(samples) * 1000:.0f} ms (n={len(samples)})"


# Issue 25's whole-process medians before its Deliver-3 work (commit 36a85ad), measured with
# the same harness (:func:`installed_cli`: a compiled install, the functor compile cache warm)
# on this 2-core machine, interleaved with runs of the work's result so both saw the same load,
# on a practice tree of torch 2.13's real files: the figures each benchmark prints its own beside.
BEFORE_MS = {
    "new-op heaviside --dry-run": 626,
    "new-op heaviside --dry-run, first compile": 941,
    "migrate-from-mpsgraph acosh --dry-run": 682,
    "explain heaviside": 845,
    "explain acosh": 767,
    "coverage": 1452,
    "spec validate": 216,
    "doctor": 313,
    "try heaviside, cached build": 1712,
}


def verdict(label: str, samples: list[float], target_ms: float, in_process: list[float] | None = None) -> bool:
    """Print ``label``'s whole-process median with its target, ok/MISSED, the in-process
    median when given and the figure before issue 25 (:data:`BEFORE_MS`); True when met."""
    median = statistics.median(samples) * 1000
    met = median <= target_ms
    # (the fastest run beside it: on a machine others share, the median moves with their load)
    line = (
        f"{label:<40} whole process {median:5.0f} ms (n={len(samples)}, fastest {min(samples) * 1000:.0f})  "
        f"target <= {target_ms:.0f} ms: {'ok' if met else 'MISSED'}"
    )
    if in_process:
        line += f"   in-process {statistics.median(in_process) * 1000:.0f} ms"
    if label in BEFORE_MS:
        line += f"   before: {BEFORE_MS[label]} ms"
    print(line, flush=True)
    return met


@contextlib.contextmanager
def installed_cli() -> Iterator[Callable[..., list[float]]]:
    """``run(args, repeat, ok=(0,), warm=True)``: wall-clock seconds of ``python -m mpsgen
    ARGS`` as a user's ``pip install`` runs it (:func:`compiled_install`: bytecode compiled;
    this interpreter, whose venv holds mpsgen's dependencies). Warm: a cache folder of its own,
    warmed by one unmeasured run first (the functor compile cache, try's builds, the page
    cache); cold: an empty cache folder for every sample."""
    import os

    with tempfile.TemporaryDirectory() as tmp:
        env = compiled_install(Path(tmp) / "install")
        env["XDG_CACHE_HOME"] = os.path.join(tmp, "cache")

        # run from the temporary folder: `python -m` puts the working folder first on sys.path, and
        # from the repository's top the child would import the checkout, not the compiled install
        def run(args: list[str], repeat: int, ok: tuple[int, ...] = (0,), warm: bool = True) -> list[float]:
            cmd = [sys.executable, "-m", "mpsgen", *map(str, args)]
            if not warm:
                return [
                    time_process(cmd, 1, ok, {**env, "XDG_CACHE_HOME": tempfile.mkdtemp(dir=tmp)}, cwd=tmp)[0]
                    for _ in range(repeat)
                ]
            time_process(cmd, 1, ok, env, cwd=tmp)
            return time_process(cmd, repeat, ok, env, cwd=tmp)

        yield run


@contextlib.contextmanager
def real_practice_tree() -> Iterator[Path]:
    """A practice tree holding the real torch 2.13 files, in a temporary folder."""
    from mpsgen.report.practice import build_practice_tree

    with tempfile.TemporaryDirectory() as tmp:
        root, real = build_practice_tree(Path(tmp) / "pytorch")
        if not real:
            raise SystemExit("install torch==2.13.0: the benchmark runs on its real files")
        yield root


def compiled_install(dest: Path) -> dict[str, str]:
    """A copy of mpsgen (package, templates, specs) in ``dest`` with its bytecode compiled, as
    ``pip install`` leaves it, and the environment that imports it. An editable checkout run
    with PYTHONDONTWRITEBYTECODE (as in this sandbox) compiles every module on every start."""
    import os
    import shutil

    repo = Path(__file__).resolve().parents[1]
    for name in ("mpsgen", "templates", "specs"):
        shutil.copytree(repo / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(dest / "mpsgen")], check=True, capture_output=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(dest) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def clean_venv(dest: Path) -> str:
    """A fresh virtual environment (no pip, no site-packages of this installation) and its
    python: an interpreter whose start-up runs no other package's hooks. mpsgen's check needs
    only the standard library; run it there with :func:`compiled_install`'s environment."""
    import venv

    venv.EnvBuilder(with_pip=False, clear=True).create(dest)
    return str(dest / "bin" / "python")


# what pip writes for a [project.scripts] entry (the launcher pre-commit and lintrunner run)
_CONSOLE_SCRIPT = """#!{python}
# -*- coding: utf-8 -*-
import re
import sys
from mpsgen.__main__ import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""


def console_script(python: str) -> str:
    """The ``mpsgen`` launcher pip installs beside ``python`` (a venv's bin/), as pip writes
    it: the command a pre-commit hook's ``entry: mpsgen check`` runs."""
    import os

    path = Path(python).parent / "mpsgen"
    path.write_text(_CONSOLE_SCRIPT.format(python=python))
    os.chmod(path, 0o755)
    return str(path)
