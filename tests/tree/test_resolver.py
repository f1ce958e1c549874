"""tree.resolver: row -> CPU/CUDA kernel -> definition -> stub -> DECLARE_DISPATCH."""

from __future__ import annotations

from pathlib import Path

from mpsgen.tree.native_yaml import scan_native_functions
from mpsgen.tree import resolver as R
from mpsgen.tree.resolver import (
    RULE_DEFINITION,
    RULE_EXACT,
    RULE_MODULE,
    RULE_OVERLOAD,
    StubResolver,
    name_candidates,
)

YAML = """\
- func: acos.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU, CUDA: acos_out

- func: sub.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU, CUDA: sub_out

- func: special_foo.out(Tensor x, Tensor n, *, Tensor(a!) out) -> Tensor(a!)
  python_module: special
  dispatch:
    CPU, CUDA: special_foo_out

- func: pow.Tensor_Tensor_out(Tensor self, Tensor exponent, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU, CUDA: pow_Tensor_Tensor_out

- func: signbit.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU: signbit_out
    CUDA: signbit_out

- func: div.out_mode(Tensor self, Tensor other, *, str? rounding_mode, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU, CUDA: div_out_mode
"""

STUBS = {
    name: ("aten/src/ATen/native/Ops.h", i + 1)
    for i, name in enumerate(
        ["acos_stub", "add_stub", "sub_stub", "foo_stub", "pow_tensor_tensor_stub", "signbit_stub",
         "div_trunc_stub", "div_floor_stub"]
    )
}

CPP = """\
namespace at::native {

#define MAKE_UNARY(out_name, stub_name)                                  \\
  TORCH_IMPL_FUNC(out_name)(const Tensor& self, const Tensor& result) { \\
    stub_name(device_type(), *this);                                    \\
  }

MAKE_UNARY(acos_out, acos_stub)

TORCH_IMPL_FUNC(sub_out)
(const Tensor& self, const Tensor& other, const Scalar& alpha, const Tensor& result) {
  // sub_stub(device_type(), *this);  -- a comment does not count
  add_stub(device_type(), *this, -alpha);
}

Tensor& signbit_out(const Tensor& self, Tensor& result) {
  auto iter = TensorIterator::unary_op(result, self);
  signbit_stub(iter.device_type(), iter);
  return result;
}

TORCH_IMPL_FUNC(div_out_mode)(const Tensor& self, const Tensor& other, std::optional<std::string_view> mode, const Tensor& result) {
  if (!mode.has_value()) {
    div_true_stub(device_type(), *this);
  } else if (*mode == "trunc") {
    div_trunc_stub(device_type(), *this);
  } else {
    div_floor_stub(device_type(), *this);
  }
}

} // namespace at::native
"""


def rows():
    return scan_native_functions(YAML).by_name()


def resolver(tmp_path: Path, with_cpp: bool = True) -> StubResolver:
    files = []
    if with_cpp:
        path = tmp_path / "Ops.cpp"
        path.write_text(CPP)
        files = [("aten/src/ATen/native/Ops.cpp", str(path))]
    return StubResolver(STUBS, files)


def test_definitions_are_read(tmp_path):
    r, e = resolver(tmp_path), rows()
    acos = r.resolve(e["acos.out"])
    assert (acos.stub, acos.rule, acos.definition.via) == ("acos_stub", RULE_DEFINITION, "MAKE_UNARY")
    assert acos.declared_at == ("aten/src/ATen/native/Ops.h", 1)
    signbit = r.resolve(e["signbit.out"])  # separate CPU:/CUDA: lines, plain function
    assert signbit.stub == "signbit_stub" and signbit.definition.line == 16 and not signbit.foreign


def test_another_ops_stub_is_foreign(tmp_path):
    sub = resolver(tmp_path).resolve(rows()["sub.out"])
    assert sub.stub == "add_stub" and sub.foreign and sub.verified
    assert "sub_out (aten/src/ATen/native/Ops.cpp:10) calls add_stub" in sub.describe()


def test_several_stubs_are_ambiguous(tmp_path):
    div = resolver(tmp_path).resolve(rows()["div.out_mode"])
    assert div.stub is None and div.ambiguous == ("div_trunc_stub", "div_floor_stub")  # div_true_stub is undeclared here
    assert "calls several stubs" in div.describe()


def test_name_rules_without_cpp(tmp_path):
    r, e = resolver(tmp_path, with_cpp=False), rows()
    assert (r.resolve(e["acos.out"]).stub, r.resolve(e["acos.out"]).rule) == ("acos_stub", RULE_EXACT)
    foo = r.resolve(e["special_foo.out"])
    assert (foo.stub, foo.rule) == ("foo_stub", RULE_MODULE)
    pow_ = r.resolve(e["pow.Tensor_Tensor_out"])
    assert (pow_.stub, pow_.rule) == ("pow_tensor_tensor_stub", RULE_OVERLOAD)
    assert "no .cpp in this tree defines it" in pow_.describe()
    assert [n for n, _ in name_candidates(e["pow.Tensor_Tensor_out"], "pow_Tensor_Tensor_out")][:2] == [
        "pow_stub", "pow_tensor_tensor_stub"]


def test_nothing_found_names_the_candidates(tmp_path):
    e = scan_native_functions("- func: nope.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n  dispatch:\n    CPU, CUDA: nope_out\n").entries[0]
    res = resolver(tmp_path, with_cpp=False).resolve(e)
    assert res.stub is None and "tried nope_stub" in res.describe()


# -- the .cpp index: the same definitions as one _TOP_DEFINITION pass over each file -----------
def _whole_file_definitions(files: list[tuple[str, str]], stubs) -> tuple[dict, dict]:
    """What the resolver read before it indexed candidate lines: _TOP_DEFINITION over every
    whole file, the first definition of a name winning. Also each file's matched spans."""
    idx = R._CppIndex(files, stubs)
    found, spans = {}, {}
    for rel, path in files:
        text = Path(path).read_bytes().decode("utf-8", "replace")
        for m in R._TOP_DEFINITION.finditer(text):
            spans.setdefault(rel, []).append((text.count("\n", 0, m.start()) + 1, text.count("\n", 0, m.end()) + 1))
            name = m.group(1) or m.group(2)
            if name in R._NOT_FUNCTIONS or name in found:
                continue
            found[name] = R.KernelDefinition(name, rel, text.count("\n", 0, m.start()) + 1, idx._stubs_called(m.group(3)))
        if "#define" in text and "TORCH_IMPL_FUNC" in text:
            for name, start, body, via in R._macro_definitions(text):
                if name not in found:
                    found[name] = R.KernelDefinition(name, rel, text.count("\n", 0, start) + 1, idx._stubs_called(body), via)
    return found, spans


def _real_cpp_files(tmp_path: Path) -> list[tuple[str, str]]:
    """torch 2.13's ATen/native C++ headers (real code, function bodies included), as .cpp."""
    import pytest

    torch = pytest.importorskip("torch")
    native = Path(torch.__file__).parent / "include" / "ATen" / "native"
    files = sorted(native.rglob("*.h"))
    assert len(files) > 200
    return [(f"aten/src/ATen/native/{p.relative_to(native).as_posix()[:-2]}.cpp", str(p)) for p in files]


def test_cpp_index_finds_what_whole_file_passes_find(tmp_path):
    files = _real_cpp_files(tmp_path)
    stubs = {"add_stub": ("BinaryOps.h", 1), "abs_stub": ("UnaryOps.h", 1)}
    reference, spans = _whole_file_definitions(files, stubs)
    assert len(reference) > 500
    index = R._CppIndex(files, stubs)

    def hidden(d) -> bool:
        """Inside the text an earlier whole-file match took in (its body ran on to a later
        column-0 "}"): a definition the whole-file pass could not see."""
        return any(a < d.line <= b for a, b in spans.get(d.path, ()))

    def same(got, ref) -> bool:  # (name, path, line, stubs, via): what the whole-file pass reads
        return got is not None and ref is not None and got[:5] == ref[:5]

    differ = [(name, index.find(name), ref) for name, ref in reference.items() if not same(index.find(name), ref)]
    # the index finds the same definition, or an earlier one the whole-file pass skipped
    for name, got, ref in differ:
        assert got is not None and hidden(got), (name, got, ref)
    assert len(differ) <= len(reference) // 100, differ[:5]
    # and nothing the whole-file pass does not find, but such hidden ones
    for name in ("add_stub", "not_a_kernel_anywhere", "if", "return", "namespace", "ceil", "abs_impl", "minimum"):
        got = index.find(name)
        assert (got is None) if name not in reference and got is None else (same(got, reference.get(name)) or hidden(got)), name


def test_cpp_index_reads_non_ascii_empty_and_first_line_definitions(tmp_path):
    """Candidate lines are found in a file's bytes: characters of several bytes before a
    definition (offsets in bytes and in characters differ), an empty file, a definition on
    the first line, and a macro whose instance makes the kernel after a multi-byte comment."""
    (tmp_path / "A.cpp").write_text("")
    (tmp_path / "B.cpp").write_text(
        "Tensor& first_out(const Tensor& self) {\n  first_stub(kCPU);\n  return self;\n}\n"
        "// réel: the naïve form — “quoted”\n"
        "Tensor& later_out(const Tensor& self) {\n  later_stub(kCPU);\n  return self;\n}\n"
        "#define MAKE(op) \\\n  TORCH_IMPL_FUNC(op##_out) (const Tensor& self) { op##_stub(kCPU); }\n"
        "// ünïcode again\n"
        "MAKE(made)\n",
        encoding="utf-8",
    )
    stubs = {n: ("Ops.h", 1) for n in ("first_stub", "later_stub", "made_stub")}
    index = R._CppIndex([("A.cpp", str(tmp_path / "A.cpp")), ("B.cpp", str(tmp_path / "B.cpp"))], stubs)
    first, later, made = index.find("first_out"), index.find("later_out"), index.find("made_out")
    assert (first.path, first.line, first.stubs) == ("B.cpp", 1, ("first_stub",))
    assert (later.line, later.stubs) == (6, ("later_stub",))
    assert (made.line, made.stubs, made.via) == (13, ("made_stub",), "MAKE")
    assert index.find("missing_out") is None


def test_cpp_index_passes_over_a_fifo(tmp_path):
    """A FIFO named *.cpp under native/ is not waited on (nothing writes to it)."""
    import os
    import signal

    import pytest

    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    os.mkfifo(tmp_path / "Evil.cpp")
    (tmp_path / "Ops.cpp").write_text(CPP)
    index = R._CppIndex([("Evil.cpp", str(tmp_path / "Evil.cpp")), ("Ops.cpp", str(tmp_path / "Ops.cpp"))], STUBS)
    signal.signal(signal.SIGALRM, lambda *_: pytest.fail("waited on the FIFO"))
    signal.alarm(10)
    try:
        assert index.find("sub_out").path == "Ops.cpp"
    finally:
        signal.alarm(0)


# -- every way a kernel hands its stub on, in shapes upstream's .cpp files use (our own code) --------
SHAPES_YAML = """\
- func: frob.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU, CUDA: frob_out

- func: glom.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU, CUDA: glom_out

- func: blend.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  dispatch:
    CPU, CUDA: blend_out

- func: blend.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CompositeExplicitAutograd: blend_out

- func: zap.Tensor_Tensor_out(Tensor self, Tensor exponent, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  dispatch:
    CPU, CUDA: zap_Tensor_Tensor_out

- func: zap.Tensor_Scalar_out(Tensor self, Scalar exponent, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  dispatch:
    CPU, CUDA: zap_Tensor_Scalar_out

- func: zap.Scalar_out(Scalar self, Tensor exponent, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  dispatch:
    CPU, CUDA: zap_Scalar_out

- func: twirl.Tensor(Tensor self, Tensor other) -> Tensor
  structured_delegate: twirl.Tensor_out

- func: twirl.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  dispatch:
    CPU, CUDA: twirl_out

- func: twirl.Scalar(Tensor self, Scalar other) -> Tensor
  dispatch:
    CompositeExplicitAutograd: twirl

- func: twirl.Scalar_Tensor(Scalar self, Tensor other) -> Tensor
  dispatch:
    CPU, CUDA: twirl

- func: twirl.Scalar_Scalar(Scalar self, Scalar other, int flag) -> Tensor
  dispatch:
    CPU, CUDA: twirl

- func: pick.self(Tensor condition, Tensor self, Tensor other) -> Tensor
  dispatch:
    CPU, CUDA: pick

- func: hush(Tensor self) -> Tensor
  dispatch:
    CPU, CUDA: hush

- func: hush_alias.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU, CUDA: hush_alias_out

- func: knot.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU, CUDA: knot_out

- func: empty_like(Tensor self, *, ScalarType? dtype=None, MemoryFormat? memory_format=None) -> Tensor
  dispatch:
    CompositeExplicitAutograd: empty_like
"""

SHAPES_STUBS = {
    name: ("aten/src/ATen/native/Shapes.h", i + 1)
    for i, name in enumerate(
        ["frob_stub", "glom_stub", "blend_stub", "zap_tt_stub", "zap_ts_stub", "twirl_stub", "pick_kernel", "knot_stub"]
    )
}

SHAPES_CPP = """\
namespace at::native {

template <typename Stub>
static Tensor& run_into(Tensor& out, const Tensor& a, Stub& stub) {
  auto it = TensorIterator::unary_op(out, a);
  stub(it.device_type(), it);
  return out;
}

template <typename Stub>
static Tensor& run_pair(Tensor& out, const Tensor& a, const Tensor& b, Stub& stub) {
  auto it = TensorIterator::binary_op(out, a, b);
  stub(it.device_type(), it);
  return out;
}

// the stub is an argument of a helper, not a call of its own
Tensor& frob_out(const Tensor& self, Tensor& result) {
  return run_into(result, self, frob_stub);
}

Tensor& glom_out(const Tensor& self, const Tensor& other, Tensor& result) { return run_pair(result, self, other, glom_stub); }

// an overload of the same name serves another row; it comes first in the file
Tensor& blend_out(const Tensor& self, const Scalar& other, Tensor& result) {
  return at::blend_out(result, self, wrap_number(other));
}

#define PAIR_KERNEL(kernel_name, stub_name)                                           \\
  TORCH_IMPL_FUNC(kernel_name)(const Tensor& self, const Tensor& other, const Tensor& out) { \\
    stub_name(device_type(), *this);                                                 \\
  }

PAIR_KERNEL(blend_out, blend_stub)
PAIR_KERNEL(twirl_out, twirl_stub)

TORCH_IMPL_FUNC(zap_Tensor_Tensor_out)(const Tensor& self, const Tensor& e, const Tensor& out) {
  zap_tt_stub(device_type(), *this);
}

TORCH_IMPL_FUNC(zap_Tensor_Scalar_out)(const Tensor& self, const Scalar& e, const Tensor& out) {
  zap_ts_stub(device_type(), *this, e);
}

// forwards to another overload's out= kernel: its arguments say which
TORCH_IMPL_FUNC(zap_Scalar_out)(const Scalar& self, const Tensor& e, const Tensor& out) {
  at::zap_out(const_cast<Tensor&>(out), wrap_number(self, e.device()), e);
}

Tensor twirl(const Tensor& self, const Scalar& other) {
  return at::twirl(self, wrap_number(other));
}

// a functional row forwarding to the structured one (through its delegate)
Tensor twirl(const Scalar& self, const Tensor& other) {
  return at::twirl(wrap_number(self), other);
}

// a static helper of the .cpp runs the stub
Tensor& pick_into(const Tensor& c, const Tensor& a, const Tensor& b, Tensor& out) {
  auto it = TensorIteratorConfig().add_output(out).add_const_input(c).add_const_input(a).add_const_input(b).build();
  pick_kernel(it.device_type(), it);
  return out;
}

Tensor pick(const Tensor& c, const Tensor& a, const Tensor& b) {
  Tensor out = at::empty_like(a);
  at::native::pick_into(c, a, b, out);
  return out;
}

// nothing to read: an operator, then only factories
Tensor hush(const Tensor& self) {
  return self != self;
}

Tensor& hush_alias_out(const Tensor& self, Tensor& result) {
  return result.copy_(at::empty_like(self));
}

// integers are copied before the stub is handed on
Tensor& knot_out(const Tensor& self, Tensor& result) {
  if (c10::isIntegralType(self.scalar_type(), /*includeBool=*/true)) {
    result.copy_(self);
    return result;
  }
  return run_into(result, self, knot_stub);
}

} // namespace at::native
"""


def shapes(tmp_path: Path, yaml: bool = True) -> tuple[StubResolver, dict]:
    path = tmp_path / "Shapes.cpp"
    path.write_text(SHAPES_CPP)
    resolver = StubResolver(SHAPES_STUBS, [("aten/src/ATen/native/Shapes.cpp", str(path))], (lambda: SHAPES_YAML) if yaml else None)
    return resolver, scan_native_functions(SHAPES_YAML).by_name()


def test_a_stub_handed_to_any_helper_is_read_from_the_argument(tmp_path):
    r, e = shapes(tmp_path)
    frob = r.resolve(e["frob.out"])
    assert (frob.stub, frob.rule, frob.definition.line) == ("frob_stub", RULE_DEFINITION, 18)
    assert "frob_out (aten/src/ATen/native/Shapes.cpp:18) passes frob_stub to run_into" in frob.describe()
    assert r.resolve(e["glom.out"]).stub == "glom_stub"  # a one-line body, another helper


def test_a_structured_row_runs_its_macro_made_impl_not_a_plain_overload_of_that_name(tmp_path):
    r, e = shapes(tmp_path)
    blend = r.resolve(e["blend.Tensor_out"])
    assert (blend.stub, blend.definition.via, blend.definition.impl) == ("blend_stub", "PAIR_KERNEL", True)
    assert len(r._cpp.find_all("blend_out")) == 2 and r._cpp.find("blend_out").params.startswith("const Tensor& self, const Scalar&")


def test_a_row_read_without_its_schema_is_looked_up_in_the_yaml(tmp_path):
    """check's rows carry names and dispatch lines only: the kind comes from the yaml."""
    from mpsgen.tree.native_rows import scan_rows

    r, _ = shapes(tmp_path)
    rows = {row.name: row for row in scan_rows(SHAPES_YAML)}
    assert r.resolve(rows["blend.Tensor_out"]).stub == "blend_stub"
    assert r.resolve(rows["twirl.Scalar_Tensor"]).stub == "twirl_stub"


def test_an_out_kernel_forwarding_to_another_overload_follows_it_by_argument_kinds(tmp_path):
    r, e = shapes(tmp_path)
    zap = r.resolve(e["zap.Scalar_out"])
    assert (zap.stub, zap.verified, zap.foreign) == ("zap_tt_stub", True, False)
    assert "forwards to zap.Tensor_Tensor_out (at::zap_out)" in zap.describe()
    assert "zap_Tensor_Tensor_out (aten/src/ATen/native/Shapes.cpp:37) calls zap_tt_stub" in zap.describe()


def test_a_plain_row_is_the_overload_with_its_argument_kinds_then_its_forward(tmp_path):
    r, e = shapes(tmp_path)
    twirl = r.resolve(e["twirl.Scalar_Tensor"])
    assert twirl.definition.params == "const Scalar& self, const Tensor& other"
    assert twirl.stub == "twirl_stub" and "forwards to twirl.Tensor (at::twirl)" in twirl.describe()
    # no overload takes (Scalar, Scalar, int): refused, naming the definitions and the row's arguments
    none = r.resolve(e["twirl.Scalar_Scalar"])
    assert none.stub is None
    assert "none of its definitions" in none.describe() and "(Scalar, Scalar, other)" in none.describe()


def test_a_static_helper_that_runs_the_stub_is_followed(tmp_path):
    r, e = shapes(tmp_path)
    pick = r.resolve(e["pick.self"])
    assert pick.stub == "pick_kernel"
    assert "calls pick_into (aten/src/ATen/native/Shapes.cpp:" in pick.describe()


def test_nothing_to_read_is_refused_with_what_was_looked_for(tmp_path):
    r, e = shapes(tmp_path)
    hush = r.resolve(e["hush"])
    assert hush.stub is None and "hands none to a helper and forwards to no other op's kernel" in hush.describe()
    alias = r.resolve(e["hush_alias.out"])  # at::empty_like: a row without a CPU/CUDA kernel
    assert alias.stub is None and "forwards only to rows without a CPU/CUDA kernel" in alias.describe()


def test_an_integral_early_return_before_a_handed_on_stub_is_seen(tmp_path):
    r, e = shapes(tmp_path)
    knot = r.resolve(e["knot.out"])
    assert knot.stub == "knot_stub" and knot.definition.copies_integral


def test_without_the_yaml_forwards_are_not_followed(tmp_path):
    r, e = shapes(tmp_path, yaml=False)
    assert r.resolve(e["frob.out"]).stub == "frob_stub"  # the definition alone says it
    assert r.resolve(e["zap.Scalar_out"]).stub is None


def test_several_rows_reached_must_agree(tmp_path):
    """at::zap_out(out, x, y) with kinds the caller does not show fits both zap overloads,
    which run different stubs: refused, naming them."""
    cpp = SHAPES_CPP.replace("wrap_number(self, e.device()), e);", "wrap_number(self, e.device()), e.clone());")
    path = tmp_path / "Shapes.cpp"
    path.write_text(cpp)
    r = StubResolver(SHAPES_STUBS, [("aten/src/ATen/native/Shapes.cpp", str(path))], lambda: SHAPES_YAML)
    zap = r.resolve(scan_native_functions(SHAPES_YAML).by_name()["zap.Scalar_out"])
    assert zap.stub is None and zap.ambiguous == ("zap_tt_stub", "zap_ts_stub")
    assert "run several stubs: zap_tt_stub, zap_ts_stub" in zap.describe()


def test_declare_dispatch_with_an_inline_function_type_names_its_stub(tmp_path):
    from mpsgen.tree.stubs import collect_stubs

    h = tmp_path / "Ops.h"
    h.write_text(
        "DECLARE_DISPATCH(void (*)(TensorIteratorBase&, int64_t), rounding_stub)\n"
        "DECLARE_DISPATCH(\n    void (*)(TensorIteratorBase&, std::optional<double>, std::optional<double>),\n    clip_stub)\n"
        "DECLARE_DISPATCH(unary_fn, plain_stub)\n"
    )
    assert collect_stubs([("Ops.h", h)]) == {"rounding_stub": ("Ops.h", 1), "clip_stub": ("Ops.h", 2), "plain_stub": ("Ops.h", 5)}


ONE_LINERS_CPP = """\
namespace at::native {

Tensor& glom_out(const Tensor& self, const Tensor& other, Tensor& result) { return run_pair(result, self, other, glom_stub); }
Tensor& frob_out(const Tensor& self, Tensor& result) { return run_into(result, self, frob_stub); }

} // namespace at::native
"""


def test_a_one_line_definition_ends_at_its_own_brace(tmp_path):
    """A definition written on one line ends where its braces close, not at the next "}" in
    column 0: the one-line definitions after it are not its body (their stubs are not its own)."""
    path = tmp_path / "OneLiners.cpp"
    path.write_text(ONE_LINERS_CPP)
    r = StubResolver(SHAPES_STUBS, [("aten/src/ATen/native/OneLiners.cpp", str(path))], lambda: SHAPES_YAML)
    e = scan_native_functions(SHAPES_YAML).by_name()
    glom = r.resolve(e["glom.out"])
    assert (glom.stub, glom.definition.stubs, glom.ambiguous) == ("glom_stub", ("glom_stub",), ())
    assert r.resolve(e["frob.out"]).definition.stubs == ("frob_stub",)
