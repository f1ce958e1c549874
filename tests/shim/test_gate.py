"""The compile gate: every functor mpsgen would write is compiled against its model of Metal
for each registered type pair, before anything is written; errors point at the functor's source."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpsgen.shim import gate as compile_gate
from mpsgen.shim.gate import gate_spec, metal_problems
from mpsgen.core.resources import resource_dir
from mpsgen.spec.op import FunctorSource, OpSpec, load_spec
from tests.conftest import snapshot

needs_compiler = pytest.mark.skipif(compile_gate.find_compiler() is None, reason="no C++ compiler on PATH")


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch) -> Path:
    """Each test compiles into its own cache (what it finds there is its own doing)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache


def _error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error: ")]


@needs_compiler
@pytest.mark.parametrize(
    "expr, says",
    [
        ("a +", "--expr (column 4 of the expression): the functor does not compile against mpsgen's Metal model: expected primary-expression"),
        ("x > 0", "--expr (column 1 of the expression): the functor does not compile against mpsgen's Metal model: 'x' was not declared"),
    ],
)
def test_a_functor_that_does_not_compile_is_refused_and_nothing_written(real_tree: Path, run, expr: str, says: str):
    before = snapshot(real_tree)
    result = run("new-op", "heaviside", "--binary", "--integer", "--expr", expr, "--root", real_tree)
    assert result.exit_code == 1, result.output
    assert any(line.startswith(f"error: {says}") for line in _error_lines(result.output)), result.output
    assert "nothing written" in result.output
    assert snapshot(real_tree) == before


@needs_compiler
@pytest.mark.parametrize("how", [(), ("--patch", "x.patch")])
def test_dry_run_and_patch_are_gated_too(real_tree: Path, run, tmp_path: Path, how, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = how or ("--dry-run",)
    result = run("new-op", "heaviside", "--binary", "--expr", "a +", "--root", real_tree, *args)
    assert result.exit_code == 1, result.output
    assert _error_lines(result.output)
    assert not (tmp_path / "x.patch").exists()
    assert "next steps:" not in result.output  # no build/test commands for a change that cannot build


@needs_compiler
def test_a_good_functor_passes_and_is_written(real_tree: Path, run):
    result = run("new-op", "heaviside", "--binary", "--integer", "--expr", "a == T(0) ? b : static_cast<T>(a > T(0))", "--root", real_tree)
    assert result.exit_code == 0, result.output
    assert not _error_lines(result.output)


@needs_compiler
def test_spec_errors_point_at_the_spec_file_line_and_column(real_tree: Path, run, tmp_path: Path):
    spec = tmp_path / "heaviside.yaml"
    spec.write_text(
        "name: heaviside\nkind: binary\ndtypes: [integer]\nfunctor: |\n  template <typename T>\n"
        "  inline T operator()(const T a, const T b) {\n    if (a == T(0)) {\n      return b;\n    }\n"
        "    return static_cast<T>(a > T(0)) + undefined_thing;\n  }\n"
    )
    result = run("new-op", "heaviside", "--spec", spec, "--dry-run", "--root", real_tree)
    assert result.exit_code == 1
    # line 10 of the file; 'undefined_thing' starts in its column 39
    assert _error_lines(result.output)[0].startswith(f"error: {spec}:10:39: the functor does not compile"), result.output
    quoted = tmp_path / "q.yaml"
    quoted.write_text('name: heaviside\nkind: binary\nexpr: "a + * b"\n')
    result = run("spec", "validate", quoted)
    assert result.exit_code == 2
    assert f"{quoted}:3:12: the functor does not compile" in result.output  # at the '*'


@needs_compiler
def test_functor_file_errors_name_its_line(real_tree: Path, run, tmp_path: Path):
    body = tmp_path / "body.txt"
    body.write_text("template <typename T>\ninline T operator()(const T a, const T b) {\n  T r = a;\n  return r + missing_name;\n}\n")
    result = run("new-op", "heaviside", "--binary", "--functor-file", body, "--dry-run", "--root", real_tree)
    assert result.exit_code == 1
    assert _error_lines(result.output)[0].startswith(f"error: --functor-file {body}:4:14: "), result.output


@needs_compiler
def test_an_error_in_one_registered_type_pair_names_the_pair(real_tree: Path, run, tmp_path: Path):
    # only a floating overload, but integers are registered: the call for long does not compile
    body = tmp_path / "body.txt"
    body.write_text(
        "template <typename T, enable_if_t<is_floating_point_v<T>, bool> = true>\n"
        "inline T operator()(const T a, const T b) {\n  return a + b;\n}\n"
    )
    result = run("new-op", "heaviside", "--binary", "--integer", "--functor-file", body, "--dry-run", "--root", real_tree)
    assert result.exit_code == 1
    error = _error_lines(result.output)[0]
    assert "when called with long inputs giving long, as its registration does" in error, error


@pytest.mark.parametrize(
    "expr, why",
    [
        ("double(a) + b", "Metal has no double"),
        ("(long double)a", "Metal has no double"),
        ("std::max(a, b)", "no C++ standard library"),
        ("a + printf(\"%f\", b)", "cannot print"),
        ("a ? throw 1 : b", "no exceptions"),
        ("*new T(a) + b", "no new or delete"),
        ("a + (*(T (*)(T))nullptr)(b)", "no function pointers"),
    ],
)
def test_what_metal_rejects_is_refused_even_where_cxx_accepts_it(expr: str, why: str):
    spec = OpSpec(name="heaviside", kind="binary", functor=FunctorSource(expr=expr, origin="--expr"))
    from mpsgen.codegen.functor import render_functor

    problems = metal_problems(spec.functor, render_functor(spec))
    assert problems and why in problems[0], problems
    assert problems[0].startswith("--expr (column ")


def test_recursion_is_refused_but_an_overload_calling_another_is_not():
    from mpsgen.codegen.functor import render_functor

    recursive = "template <typename T>\ninline T operator()(const T x) {\n  return x > T(0) ? operator()(x - T(1)) : x;\n}\n"
    spec = OpSpec(name="relu", kind="unary", functor=FunctorSource(body=recursive, origin="f", line=1))
    problems = metal_problems(spec.functor, render_functor(spec))
    assert problems == ["f:3: operator() calls itself; Metal has no recursion (write it as a loop)."]
    helper = "inline float step(float x) {\n  return x < 1 ? x : step(x / 2);\n}\n"
    spec = OpSpec(name="relu", kind="unary", functor=FunctorSource(body=helper + recursive.replace("operator()(x - T(1))", "x"), origin="f", line=1))
    assert any("step calls itself" in p for p in metal_problems(spec.functor, render_functor(spec)))
    overloads = (
        "template <typename T, enable_if_t<is_integral_v<T>, bool> = true>\ninline float operator()(const T x) {\n"
        "  return operator()(static_cast<float>(x));\n}\ninline float operator()(const float x) {\n  return x;\n}\n"
    )
    spec = OpSpec(name="relu", kind="unary", functor=FunctorSource(body=overloads, origin="f", line=1))
    assert metal_problems(spec.functor, render_functor(spec)) == []


@needs_compiler
def test_every_shipped_spec_and_example_passes_the_gate():
    paths = sorted(resource_dir("specs").glob("*.yaml")) + sorted((Path(__file__).parents[2] / "examples" / "specs").glob("*.yaml"))
    assert len(paths) > 25
    for path in paths:
        result = gate_spec(load_spec(path))
        assert result.problems == [], path


@needs_compiler
def test_the_answer_is_cached_by_content(own_cache: Path):
    spec = load_spec(resource_dir("specs") / "heaviside.yaml")
    first = gate_spec(spec)
    again = gate_spec(spec)
    assert (first.cached, again.cached) == (False, True)
    assert first.problems == again.problems == []
    entries = list((own_cache / "mpsgen" / "gate").iterdir())
    assert len(entries) == 1 and entries[0].read_text().startswith("0\n")
    bad = OpSpec(name="heaviside", kind="binary", functor=FunctorSource(expr="a +", origin="--expr"))
    assert gate_spec(bad).problems == gate_spec(bad).problems != []  # a failure is cached as it was
    assert gate_spec(bad).cached


def test_without_a_compiler_the_gate_says_so_once_and_goes_on(real_tree: Path, run, monkeypatch):
    monkeypatch.setattr(compile_gate, "find_compiler", lambda: None)
    result = run("new-op", "heaviside", "--binary", "--integer", "--expr", "a == T(0) ? b : static_cast<T>(a > T(0))", "--dry-run", "--root", real_tree)
    assert result.exit_code == 0, result.output
    assert result.output.count("no C++ compiler") == 1
    result = run("new-op", "heaviside", "--binary", "--expr", "std::abs(a)", "--dry-run", "--root", real_tree)
    assert result.exit_code == 1 and "no C++ standard library" in result.output  # the Metal checks still run
    result = run("spec", "validate", resource_dir("specs") / "heaviside.yaml", resource_dir("specs") / "acosh.yaml")
    assert result.exit_code == 0 and result.output.count("no C++ compiler") == 1
