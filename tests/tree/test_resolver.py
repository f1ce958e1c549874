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
