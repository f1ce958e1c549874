"""Spec loading and `mpsgen spec validate`: every problem, with file:line:col."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpsgen.core.errors import SpecErrors
from mpsgen.core.resources import resource_dir
from mpsgen.spec.op import load_spec, parse_spec_text


def problems(text: str) -> list[str]:
    _spec, found = parse_spec_text(text, "s.yaml")
    return [f"{loc}: {msg}" for loc, msg in found]


def test_shipped_specs_are_valid():
    specs = sorted(resource_dir("specs").glob("*.yaml"))
    assert specs, "specs/ ships at least one spec"
    for path in specs:
        spec = load_spec(path)
        assert spec.name == path.stem


def test_minimal_spec_defaults():
    spec, found = parse_spec_text("name: heaviside\nkind: binary\n", "s.yaml")
    assert not found and spec is not None
    assert spec.stub == "" and spec.dtypes == ("float",) and spec.rows is None
    assert spec.functor.is_scaffold


def test_every_problem_reported_with_line_and_column():
    text = (
        "name: 'bad;name'\n"
        "kind: quaternary\n"
        "dtypes: [float, float128]\n"
        "stub: 'x y'\n"
        "files:\n"
        "  metal: /etc/passwd\n"
        "  mm: ../../outside.mm\n"
        "colour: blue\n"
    )
    found = problems(text)
    assert any(p.startswith("s.yaml:1:7: 'name'") and "not a C identifier" in p for p in found)
    assert any(p.startswith("s.yaml:2:7: unknown kind 'quaternary'") for p in found)
    assert any(p.startswith("s.yaml:3:17: unknown dtype group 'float128'") for p in found)
    assert any(p.startswith("s.yaml:4:7: 'stub'") for p in found)
    assert any(p.startswith("s.yaml:6:10: files.metal:") and "absolute" in p for p in found)
    assert any(p.startswith("s.yaml:7:7: files.mm:") and "outside the PyTorch tree" in p for p in found)
    assert any(p.startswith("s.yaml:8:1: unknown key 'colour'; known keys:") for p in found)
    assert len(found) == 7


def test_a_misspelt_key_gets_the_key_it_is_close_to():
    found = problems("name: heaviside\nknid: binary\nexpr: \"a\"\n")
    assert any(p.startswith("s.yaml:2:1: unknown key 'knid' (did you mean 'kind'?); known keys:") for p in found), found


@pytest.mark.parametrize(
    "name", ["1abc", "a)b", "a;b", 'a"b', "a'b", "a\\nb", "struct", "with space"]
)
def test_names_that_are_not_c_identifiers(name):
    found = problems(f"name: {name!r}\nkind: unary\n".replace("\\\\n", "\\n"))
    assert found and ("C identifier" in found[0] or "keyword" in found[0])


def test_contradictory_dtype_groups():
    found = problems("name: x\nkind: binary\ndtypes: [int2float, integer]\n")
    assert found and "pick one" in found[0]
    found = problems("name: x\nkind: unary\ndtypes: [opmath]\n")
    assert found and "opmath" in found[0]


def test_malformed_yaml_has_a_location():
    found = problems("name: x\nkind: [unary\n")
    assert found and found[0].startswith("s.yaml:") and "not valid YAML" in found[0]


def test_functor_forms():
    spec, _ = parse_spec_text("name: x\nkind: unary\nfunctor:\n  expr: x * x\n", "s")
    assert spec.functor.expr == "x * x"
    spec, _ = parse_spec_text("name: x\nkind: unary\nexpr: x + 1\n", "s")
    assert spec.functor.expr == "x + 1"
    spec, _ = parse_spec_text("name: x\nkind: unary\nfunctor: |\n  template <typename T>\n  T operator()(T x) { return x; }\n", "s")
    assert "operator()" in spec.functor.body
    assert problems("name: x\nkind: unary\nfunctor: {expr: a}\nexpr: b\n")


def test_load_spec_raises_with_all_problems(tmp_path: Path):
    p = tmp_path / "bad.yaml"
    p.write_text("kind: unary\n")
    with pytest.raises(SpecErrors) as info:
        load_spec(p)
    assert "missing required key 'name'" in str(info.value)


def test_cli_validate_reports_and_exits_2(tmp_path: Path, run):
    good = resource_dir("specs") / "heaviside.yaml"
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: ok\nkind: binary\ndtypes: [float, quad]\n")
    result = run("spec", "validate", good, bad)
    assert result.exit_code == 2
    assert f"{bad}:3:17: unknown dtype group 'quad'" in result.stderr
    assert "ok" in result.stderr and "Traceback" not in result.output
    assert run("spec", "validate", good).exit_code == 0


def test_bool_out_registers_every_input_type_with_a_bool_result():
    from mpsgen.spec.registrations import input_dtypes
    from mpsgen.spec.op import OpSpec, check_dtype_groups

    spec = OpSpec(name="signbit", kind="unary", dtypes=("integer", "bool_out"))
    pairs = input_dtypes(spec)
    assert {o for _i, o in pairs} == {"bool"}
    assert [i for i, _o in pairs] == ["float", "half", "bfloat", "long", "int", "short", "uchar", "char", "bool"]
    assert check_dtype_groups("unary", ["int2float", "bool_out"])
    # complex predicates (logical_not of complex64): float2 -> bool, half2 -> bool
    complex_pairs = input_dtypes(OpSpec(name="logical_not", kind="unary", dtypes=("complex", "bool_out")))
    assert ("float2", "bool") in complex_pairs and ("half2", "bool") in complex_pairs
    assert not check_dtype_groups("unary", ["complex", "bool_out"])


def test_try_domain_is_validated_with_positions():
    head = "name: x\nkind: binary\ndtypes: [float]\nexpr: a + b\n"
    spec, found = parse_spec_text(head + "try_domain:\n  b: [-.inf, 100]\n  why: degrees\n", "s.yaml")
    assert not found and spec.try_domain == {"b": (float("-inf"), 100.0)} and spec.try_domain_why == "degrees"
    found = problems(head + "try_domain:\n  x: [0, 1]\n  b: [3, 1]\n  a: [0, .nan]\n  c: 5\n")
    assert "s.yaml:6:3: 'x' is not an operand of a binary op; 'try_domain' takes a, b and why." in found
    assert "s.yaml:7:6: try_domain.b: low 3 is above high 1; no sample would be left." in found
    assert "s.yaml:8:6: try_domain.a must be [low, high], two numbers (.inf and -.inf allowed)." in found
    assert any(p.startswith("s.yaml:9:3: 'c' is not an operand") for p in found)
    assert any(p.startswith("s.yaml:5:1: 'try_domain' needs 'why'") for p in found)
    assert problems(head + "try_domain:\n  why: ''\n  b: [0, 1]\n") == ["s.yaml:6:8: 'try_domain.why' must be a non-empty string (mpsgen try prints it)."]
    assert any("restricts no operand" in p for p in problems(head + "try_domain:\n  why: because\n"))
    assert any("must map operands" in p for p in problems(head + "try_domain: [0, 1]\n"))
    assert any("complex inputs" in p for p in problems(head.replace("[float]", "[float, complex]") + "try_domain:\n  a: [0, 1]\n  why: w\n"))


def test_every_spec_kind_refuses_a_document_that_is_no_mapping_at_line_1():
    """One reader (spec.op.spec_mapping) for op, kernel and reduction specs: YAML that does not
    parse, or a list, is refused with what a spec of that kind is."""
    from mpsgen.spec.kernel import parse_kernel_spec_text
    from mpsgen.spec.op import parse_spec_text
    from mpsgen.spec.reduction import parse_reduction_spec_text

    for parse, said in ((parse_spec_text, "a spec must be"), (parse_kernel_spec_text, "a kernel spec is"),
                        (parse_reduction_spec_text, "a reduction spec is")):
        spec, problems = parse("- a\n- b\n", "x.yaml")
        assert spec is None and len(problems) == 1 and problems[0][0].line == 1 and problems[0][1].startswith(said)
        spec, problems = parse("a: [\n", "x.yaml")
        assert spec is None and problems and "not valid YAML" in problems[0][1]
