"""``mpsgen tutorial``: a guided first MPS op on a practice tree. The steps are data (what to
say, what to run); the CLI shows each command and its output, and waits between steps
unless ``--yes``. Every command is a real mpsgen command, shown so it can be typed again."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mpsgen.core.resources import resource_dir
from mpsgen.tree import OPERATIONS_DIR

BINARY_MM = f"{OPERATIONS_DIR}/BinaryKernel.mm"


@dataclass(frozen=True)
class Step:
    title: str
    say: str
    args: tuple[str, ...] = ()  # mpsgen arguments to run ("" none)
    expect: tuple[int, ...] = (0,)  # the exit statuses this step expects
    action: str | None = None  # something the tutorial does to the tree itself ("break")


def steps(root: Path) -> list[Step]:
    spec = str(resource_dir("specs") / "heaviside.yaml")
    r = ("--root", str(root))
    return [
        Step(
            "1. What is missing",
            "torch.heaviside has CPU and CUDA kernels but none for MPS. `explain` shows its rows, the stub its CPU "
            "kernel calls, and the test entries that expect it to fail on MPS.",
            ("explain", "heaviside", *r),
        ),
        Step(
            "2. Preview the change",
            "`new-op` writes every piece: the functor and its REGISTER_* lines in BinaryKernel.metal, the host "
            "kernel and REGISTER_DISPATCH in BinaryKernel.mm, MPS on the shared yaml line, and the xfails removed. "
            "The functor comes from mpsgen's spec for heaviside. --dry-run only shows the diff.",
            ("new-op", "heaviside", "--spec", spec, "--dry-run", *r),
        ),
        Step("3. Write it", "The same command without --dry-run writes all files or none.", ("new-op", "heaviside", "--spec", spec, *r)),
        Step(
            "4. Check it",
            "`explain` now shows heaviside on Metal, and `check` cross-checks the yaml, the .mm and .metal files and the "
            "test lists: the file new-op changed is consistent. (--strict: a practice tree holds only a few .mm "
            "files, so check would otherwise sum up what they miss in one note.)",
            ("check", "--strict", str(root / BINARY_MM), *r),
        ),
        Step(
            "5. Break something",
            f"Now the tutorial deletes heaviside's REGISTER_DISPATCH line from {BINARY_MM}, a classic slip: it builds, "
            "and then fails at run time with 'DispatchStub: missing kernel for mps'.",
            action="break",
        ),
        Step(
            "6. See check catch it",
            "Run on the changed file (as pre-commit and lintrunner do): MPS002 names the yaml row and the stub.",
            ("check", "--strict", str(root / BINARY_MM), *r),
            expect=(1,),
        ),
        Step(
            "7. Your turn",
            "On your checkout: `mpsgen coverage` lists what is still on MPSGraph or missing; `mpsgen explain OP` "
            "prints the command for the next step; `mpsgen doctor` checks your set-up. An op that is not elementwise "
            "(a pooling backward, a distance) gets a custom kernel from the body you write: `mpsgen new-kernel "
            "_pdist_forward --dry-run` shows one (specs/kernels/README.md). After writing, build on a Mac and run the "
            "test commands mpsgen prints.",
        ),
    ]


def break_registration(root: Path) -> str:
    """Delete heaviside's REGISTER_DISPATCH line; say what was done."""
    path = root / BINARY_MM
    lines = path.read_text().split("\n")
    kept = [ln for ln in lines if not ln.strip().startswith("REGISTER_DISPATCH(heaviside_stub")]
    path.write_text("\n".join(kept))
    return f"deleted {len(lines) - len(kept)} line(s) `REGISTER_DISPATCH(heaviside_stub, ...)` from {BINARY_MM}"
