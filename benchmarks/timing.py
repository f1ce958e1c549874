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


def time_process(cmd: list[str], repeat: int, ok: tuple[int, ...] = (0,), env: dict[str, str] | None = None) -> list[float]:
    def once() -> None:
        proc = subprocess.run(cmd, capture_output=True, env=env)
        if proc.returncode not in ok:
            raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.decode()[-500:]}")

    return time_it(once, repeat)


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
