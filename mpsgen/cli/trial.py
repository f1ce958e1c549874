"""``mpsgen try``: a spec's code run on this machine's CPU against torch's CPU op, whatever the
spec's kind (an op's functor, a custom kernel's body, a reduction's kernel).

The trial machinery (and torch, which it imports) is imported inside the command, for start-up
speed."""

from __future__ import annotations

from typing import Optional

import typer

from mpsgen.cli.output import busy, fail, write_out
from mpsgen.core.errors import BadInput, MpsgenError


def try_cmd(
    target: str = typer.Argument(..., metavar="OP|SPEC", help="an op with a shipped spec (acosh) or a spec file"),
    dtypes: Optional[str] = typer.Option(None, "--dtypes", metavar="LIST", help="only these input dtypes, comma-separated (float32,int64 or float,long)"),
    samples: int = typer.Option(64, "--samples", metavar="N", help="random values per dtype, beside the edge values"),
) -> None:
    """Run a spec's functor on this machine's CPU (compiled against mpsgen's model of Metal) and
    compare it with PyTorch's CPU op for every registered dtype: no Mac needed. Exit 1 on a
    mismatch, 2 when the functor uses something the model does not cover.

    Example: mpsgen try heaviside"""
    from mpsgen.shim.trial import run_trial, table
    from mpsgen.spec.kernel import KernelSpec
    from mpsgen.spec.load import kernel_overrides, load, try_spec_path
    from mpsgen.spec.reduction import ReductionSpec

    try:
        path = try_spec_path(target)
        spec = load(path, display=str(path))
        if isinstance(spec, KernelSpec):
            _try_kernel(kernel_overrides(spec, None, dtypes))
            return
        if isinstance(spec, ReductionSpec):
            _try_reduction(spec, dtypes)
            return
        if samples < 1 or samples > 100_000:
            raise BadInput("--samples must be between 1 and 100000.")
        wanted = {d.strip().replace("torch.", "") for d in dtypes.split(",") if d.strip()} if dtypes else None
        with busy(f"compiling {spec.name}_functor (cached after the first run) and comparing it with torch's CPU op..."):
            result = run_trial(spec, dtypes=wanted, samples=samples)
    except MpsgenError as exc:
        fail(exc)
    write_out(table(result))
    raise typer.Exit(0 if result.ok else 1)


def _try_kernel(spec) -> None:
    """``mpsgen try`` of a kernel spec: the body once per output element, against torch's CPU op."""
    from mpsgen.shim.kernel_trial import kernel_table, run_kernel_trial

    with busy(f"compiling {spec.kernel} (cached after the first run) and comparing it with torch's CPU op..."):
        result = run_kernel_trial(spec)
    write_out(kernel_table(result))
    raise typer.Exit(1 if result.failures else 0)


def _try_reduction(spec, dtypes: Optional[str]) -> None:
    """``mpsgen try`` of a reduction spec: the kernel, threadgroup by threadgroup, against torch's CPU op."""
    from mpsgen.shim.reduction_trial import run_reduction_trial, table
    from mpsgen.spec.reduction import REDUCTION_DTYPES

    pairs = None
    if dtypes:
        wanted = {d.strip().replace("torch.", "") for d in dtypes.split(",") if d.strip()}
        pairs = {(i, o) for i, o in spec.dtypes if i in wanted or REDUCTION_DTYPES[i] in wanted}
        if not pairs:
            raise BadInput(f"--dtypes {dtypes}: no input type the spec registers ({', '.join(dict.fromkeys(i for i, _ in spec.dtypes))}).")
    with busy(f"compiling {spec.kernel_function} (cached after the first run) and running it threadgroup by threadgroup..."):
        result = run_reduction_trial(spec, pairs=pairs)
    write_out(table(result))
    raise typer.Exit(1 if result.failures else 0)
