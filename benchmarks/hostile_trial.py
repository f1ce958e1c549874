"""The hostile-input trial: every case of tests/hostile_cases.py run as a real process
(`python -m mpsgen ...`) on a fresh practice tree of real torch 2.13 files, and counted:
tries, clean errors (the expected exit code and message, one paragraph), tracebacks,
unintended writes (a tree file changed by a refused or dry run), temporary files left,
half-applied changes. Prints the table the safety issue closes with; exit 1 if any count
that must be 0 is not.

    python benchmarks/hostile_trial.py [--repeat N]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mpsgen.practice import build_practice_tree  # noqa: E402
from tests.hostile_cases import CASES, leftovers, tree_state, undo_deep_folders  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1, help="runs of each case")
    opts = ap.parse_args()
    counts = dict.fromkeys(("tries", "clean errors", "expected successes", "wrong exit or message", "tracebacks", "unintended writes", "temp files left", "half-applied"), 0)
    failures: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        base, _ = build_practice_tree(Path(tmp) / "base", real=True)
        for case in CASES:
            for i in range(opts.repeat):
                work = Path(tmp) / f"run{i}"
                shutil.rmtree(work, ignore_errors=True)
                work.mkdir()
                root = work / "pytorch"
                shutil.copytree(base, root)
                args = case.prepare(root, work)
                before = tree_state(root)
                proc = subprocess.run(
                    [sys.executable, "-m", "mpsgen", *args], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300
                )
                text = proc.stdout + proc.stderr
                after = tree_state(root)
                left = leftovers(root)
                undo_deep_folders(root)
                counts["tries"] += 1
                ok = proc.returncode == case.exit_code and all(w in text for w in case.words)
                if "Traceback" in text:
                    counts["tracebacks"] += 1
                    ok = False
                changed = [k for k in after if before.get(k) != after[k]] + [k for k in before if k not in after]
                if changed:
                    counts["unintended writes"] += 1
                    # a refused run that changed some of the files it would edit, not all
                    counts["half-applied"] += 1 if proc.returncode else 0
                    ok = False
                if left:
                    counts["temp files left"] += 1
                    ok = False
                if ok:
                    counts["clean errors" if case.exit_code else "expected successes"] += 1
                else:
                    counts["wrong exit or message"] += 1
                    failures.append(f"{case.id}: exit {proc.returncode}: {text.strip()[:300]}")
    width = max(map(len, counts))
    for k, v in counts.items():
        print(f"{k:<{width}}  {v}")
    for f in failures:
        print("FAILED", f)
    bad = sum(counts[k] for k in ("wrong exit or message", "tracebacks", "unintended writes", "temp files left", "half-applied"))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
