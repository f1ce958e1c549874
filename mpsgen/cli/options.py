"""The command-line options several commands share, declared once (their help is the same
wherever they appear)."""

from __future__ import annotations

import typer

RootOption = typer.Option(None, "--root", metavar="DIR", help="PyTorch checkout (default: nearest ancestor holding native_functions.yaml).")

# The generation flags shared by new-op and migrate-from-mpsgraph.
UnaryOpt = typer.Option(False, "--unary", help="one tensor input")
BinaryOpt = typer.Option(False, "--binary", help="two tensor inputs")
KindOpt = typer.Option(None, "--kind", metavar="KIND", help="unary_alpha, binary_alpha, ternary, unary_params or binary_params")
Int2FloatOpt = typer.Option(False, "--int2float", help="integer and bool inputs computed in float")
IntegerOpt = typer.Option(False, "--integer", help="integer and bool inputs, same-type output")
IntegerNoBoolOpt = typer.Option(False, "--integer-no-bool", help="integer inputs without bool")
ComplexOpt = typer.Option(False, "--complex", help="complex64/complex32 (float2/half2)")
OpmathOpt = typer.Option(False, "--opmath", help="half/bfloat computed in float (REGISTER_OPMATH_*)")
ExprOpt = typer.Option(None, "--expr", metavar="EXPR", help="functor as one C++ expression of x (unary) or a, b")
FunctorFileOpt = typer.Option(None, "--functor-file", metavar="FILE", help="file with the functor's struct body")
OpSpecOpt = typer.Option(None, "--spec", metavar="SPEC", help="an op spec YAML file (default without --expr/--functor-file: specs/<op>.yaml if shipped)")
StubOpt = typer.Option(None, "--stub", metavar="STUB", help="dispatch stub name (default: the stub the row's CPU/CUDA kernel calls)")

# How a change command delivers its change.
DryRunOpt = typer.Option(False, "--dry-run", help="print the diff, write nothing")
PatchOpt = typer.Option(None, "--patch", metavar="FILE", help="write a git-apply-able patch instead of editing")
StrictOpt = typer.Option(False, "--strict", help="exit 1 when there is nothing to do")
ForceOpt = typer.Option(
    False, "--force", help="write even when the result would not build, link or dispatch (the problems are still printed)"
)

# What a change command writes or prints beside the change.
WithTestOpt = typer.Option(
    False, "--with-test", help="also write test_<op>_shader.py here: compiles the functor with torch.mps.compile_shader and compares it with the CPU op"
)
PrOpt = typer.Option(False, "--pr-description", help="print a PR title and body in PyTorch's style")
WithBenchOpt = typer.Option(
    False, "--with-bench",
    help="also write bench_<op>.py here: times the op before and after the change on a Mac (every dtype x size x layout) "
    "and prints a markdown table for the PR (an existing one is replaced only with --force)",
)
