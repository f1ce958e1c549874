"""mpsgen try: the functor compiled against mpsgen's Metal shim and compared with torch's CPU op."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import torch

from mpsgen.shim import trial
from mpsgen.core.resources import resource_dir


def spec(tmp_path: Path, body: str, name: str = "heaviside", kind: str = "binary", dtypes: str = "[float, integer]") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"name: {name}\nkind: {kind}\ndtypes: {dtypes}\n{body}")
    return path


def test_try_a_shipped_spec_matches(run):
    res = run("try", "heaviside")
    assert res.exit_code == 0, res.output
    assert "all match." in res.stdout
    for t in ("float", "half", "bfloat", "long", "uchar", "bool"):
        assert f"  {t:<8} {t:<8}" in res.stdout


def test_a_wrong_functor_is_a_mismatch_with_examples(run, tmp_path: Path):
    wrong = spec(tmp_path, 'expr: "a > T(0) ? T(1) : b"\n')  # heaviside(0, b) is b, but heaviside(-1, b) is 0
    res = run("try", wrong)
    assert res.exit_code == 1, res.output
    assert "mismatch(es)" in res.stdout and "e.g. (" in res.stdout and "torch says" in res.stdout


def test_int2float_and_nan_edges(run, tmp_path: Path):
    # acosh of ints computes in float; NaN, inf and values below 1 behave as torch's
    res = run("try", "acosh", "--dtypes", "float32,int64,bool", "--samples", "16")
    assert res.exit_code == 0, res.output
    assert "  long     float" in res.stdout and "  half " not in res.stdout


def test_something_the_shim_does_not_model_is_exit_2(run, tmp_path: Path):
    res = run("try", spec(tmp_path, 'expr: "c10::metal::zeta(a, b)"\n', dtypes="[float]"))
    assert res.exit_code == 2 and "does not model" in res.output and "zeta" in res.output
    said = " ".join(res.output.split())
    assert "the functor uses 'zeta' (a name of c10::metal:: that mpsgen's Metal shim does not model)" in said, said


def test_a_compile_error_names_the_spec_line(run, tmp_path: Path):
    bad = spec(tmp_path, 'expr: "a +* b"\n', dtypes="[float]")
    res = run("try", bad)
    assert res.exit_code == 2, res.output
    assert f"{bad}:4" in res.output and "does not compile" in res.output


def test_a_functor_that_never_ends_is_stopped(run, tmp_path: Path, monkeypatch):
    monkeypatch.setattr(trial, "TIME_LIMIT", 1.0)
    body = (
        "functor: |\n  template <typename T>\n  inline T operator()(const T x) {\n"
        "    volatile int k = 0;\n    while (k == 0) {\n    }\n    return x;\n  }\n"
    )
    res = run("try", spec(tmp_path, body, name="neg", kind="unary", dtypes="[float]"))
    assert res.exit_code == 1 and "did not finish" in res.output


def test_half_and_bfloat_round_as_the_gpu_does(tmp_path: Path):
    """Every half and bfloat bit pattern to float and back, and 200,000 floats (incl. ties and
    subnormals) rounded to each, against torch's conversions."""
    shim = resource_dir("templates") / "try" / "metal_shim.h"
    prog = tmp_path / "conv.cpp"
    prog.write_text(
        f'#include "{shim}"\n#include <cstdio>\n#include <vector>\n'
        "int main() {\n  std::vector<float> f(200000);\n  std::fread(f.data(), 4, f.size(), stdin);\n"
        "  for (int b = 0; b < 65536; ++b) { float h = half::from_bits((uint16_t)b); float g = bfloat::from_bits((uint16_t)b); std::fwrite(&h, 4, 1, stdout); std::fwrite(&g, 4, 1, stdout); }\n"
        "  for (float x : f) { uint16_t h = half(x).bits, g = bfloat(x).bits; std::fwrite(&h, 2, 1, stdout); std::fwrite(&g, 2, 1, stdout); }\n}\n"
    )
    exe = tmp_path / "conv"
    subprocess.run(["g++", "-std=c++17", "-O1", "-o", str(exe), str(prog)], check=True)
    gen = torch.Generator().manual_seed(1)
    f = torch.cat([
        (torch.rand(100000, generator=gen) - 0.5) * 1e5,
        torch.randn(50000, generator=gen) * 1e-6,  # half subnormals and ties
        torch.arange(-25000, 25000, dtype=torch.int32).to(torch.float32) * 2.0 ** -14 + 2.0 ** -25,
    ]).to(torch.float32)
    out = subprocess.run([str(exe)], input=trial.tensor_bytes(torch, f), capture_output=True, check=True).stdout
    widen = torch.frombuffer(bytearray(out[: 65536 * 8]), dtype=torch.float32).view(65536, 2)
    bits = torch.arange(65536, dtype=torch.int32).to(torch.int16)
    torch.testing.assert_close(widen[:, 0], bits.view(torch.float16).float(), equal_nan=True, rtol=0, atol=0)
    torch.testing.assert_close(widen[:, 1], bits.view(torch.bfloat16).float(), equal_nan=True, rtol=0, atol=0)
    narrow = torch.frombuffer(bytearray(out[65536 * 8 :]), dtype=torch.int16).view(-1, 2)
    assert torch.equal(narrow[:, 0], f.half().view(torch.int16))
    assert torch.equal(narrow[:, 1], f.bfloat16().view(torch.int16))


def test_complex_inputs_are_compared_part_by_part(run, tmp_path: Path):
    # conj written wrongly (the real part negated instead of the imaginary one)
    body = (
        "functor: |\n  template <typename T, enable_if_t<!is_complex_v<T>, bool> = true>\n  inline T operator()(const T x) {\n    return x;\n  }\n"
        "  template <typename T, enable_if_t<is_complex_v<T>, bool> = true>\n  inline T operator()(const T x) {\n    return T(-x.x, x.y);\n  }\n"
    )
    res = run("try", spec(tmp_path, body, name="conj_physical", kind="unary", dtypes="[float, complex]"), "--dtypes", "complex64")
    assert res.exit_code == 1, res.output
    assert "  float2   float2" in res.stdout and "mismatch(es)" in res.stdout and "j) ->" in res.stdout


def test_the_scalar_of_an_alpha_op_reaches_both_sides(run, tmp_path: Path):
    """unary_alpha: the spec's alphas are passed to the functor and, by the name the CPU op
    takes it (logit's `eps`), to torch; a clamp written min(max(x, lo), hi) differs from the
    CPU kernel's when eps > 0.5 (lo > hi), and try says so, naming eps."""
    body = (
        "alpha_type: float\nalphas: [-1.0, 0.75]\nfunctor: |\n"
        "  template <typename T, typename U>\n"
        "  inline float operator()(const T x, const U eps) {\n"
        "    float z = float(x);\n"
        "    if (eps >= 0.0f) { z = c10::metal::min(c10::metal::max(z, float(eps)), 1.0f - float(eps)); }\n"
        "    return precise::log(z / (1.0f - z));\n"
        "  }\n"
    )
    wrong = spec(tmp_path, body, name="logit", kind="unary_alpha", dtypes="[float]")
    res = run("try", wrong, "--dtypes", "float32")
    assert res.exit_code == 1, res.output
    assert "eps=0.75" in res.stdout
    # (torch's own float logit differs from one process to the next by up to ~1e-5 on some
    # inputs, so a functor that is right may be shown off by that much; never by a clamp's size)
    def torch_noise_only(out: str, eps: str) -> bool:
        return all(abs(float(got) - float(want)) <= 1e-4 * abs(float(want))
                   for got, want in re.findall(rf"eps={re.escape(eps)}\) -> (\S+), torch says (\S+)", out))
    assert torch_noise_only(res.stdout, "-1.0"), res.stdout
    right = spec(tmp_path, body.replace("[-1.0, 0.75]", "[-1.0, 0.25]"), name="logit", kind="unary_alpha", dtypes="[float]")
    res = run("try", right, "--dtypes", "float32")
    assert res.exit_code == 0 or (torch_noise_only(res.stdout, "-1.0") and torch_noise_only(res.stdout, "0.25")), res.output


def test_alphas_must_be_numbers_of_an_alpha_kind(run, tmp_path: Path):
    res = run("try", spec(tmp_path, "alphas: [1, two]\nexpr: \"a - alpha * b\"\n", name="sub", kind="binary_alpha", dtypes="[float]"))
    assert res.exit_code == 2 and "sub.yaml:4:13: 'two' is not a number" in res.output, res.output
    res = run("try", spec(tmp_path, "alphas: [1]\nexpr: \"a + b\"\n", dtypes="[float]"))
    assert res.exit_code == 2 and "'alphas' is for the unary_alpha and binary_alpha kinds" in res.output, res.output


def test_ternary_ops_get_every_triple_of_edge_values(run, tmp_path: Path):
    """lerp written as `a + c * (b - a)` (the textbook form) differs from the CPU kernel on
    infinities and large values; try runs every triple of edge values and says so."""
    res = run("try", spec(tmp_path, 'expr: "a + c * (b - a)"\n', name="lerp", kind="ternary", dtypes="[float, opmath]"), "--dtypes", "float32")
    assert res.exit_code == 1, res.output
    assert " 6923 " in res.stdout and "mismatch(es)" in res.stdout  # 19 edge values cubed, 64 random triples


def test_opmath_registrations_call_the_functor_in_float(run, tmp_path: Path):
    """REGISTER_OPMATH_*: half inputs reach the functor as float. A functor that tells the
    two apart (returns 1 for a half argument) passes only if try models that conversion."""
    body = (
        "functor: |\n  template <typename T>\n  inline T operator()(const T a, const T b) {\n"
        "    return is_same_v<T, half> ? T(1) : static_cast<T>(::metal::fma(a, b, T(0)));\n  }\n"
    )
    with_opmath = run("try", spec(tmp_path, body, name="mul", dtypes="[float, opmath]"), "--dtypes", "float16")
    assert with_opmath.exit_code == 0, with_opmath.output
    without = run("try", spec(tmp_path, body, name="mul", dtypes="[float]"), "--dtypes", "float16")
    assert without.exit_code == 1, without.output


def test_try_domain_restricts_the_samples_and_says_why(run, tmp_path: Path):
    """A functor wrong only for b > 5 fails try; with a try_domain keeping b <= 5 it passes,
    and try prints the restriction and the spec's reason. A dtype none of whose samples
    lies in the domain is shown as skipped, never as a pass."""
    wrong = 'expr: "b > T(5) ? T(42) : (a == T(0) ? b : static_cast<T>(a > T(0)))"\n'
    res = run("try", spec(tmp_path, wrong), "--dtypes", "float32,int64")
    assert res.exit_code == 1 and "mismatch(es)" in res.stdout, res.output
    domain = "try_domain:\n  b: [-.inf, 5]\n  why: the CPU op is known to differ above 5\n"
    res = run("try", spec(tmp_path, domain + wrong), "--dtypes", "float32,int64")
    assert res.exit_code == 0, res.output
    assert "samples restricted by the spec's try_domain to b in [-inf, 5] (NaN left out): the CPU op is known to differ above 5" in res.stdout
    narrow = "try_domain:\n  b: [0.25, 0.75]\n  why: only halves\n"
    res = run("try", spec(tmp_path, narrow + wrong), "--dtypes", "float32,int64")
    assert res.exit_code == 0, res.output
    assert "skipped  (no int64 sample lies in the spec's try_domain)" in res.stdout
    compared = int(res.stdout.split("\n  float    float")[1].split()[0])
    assert 0 < compared < 83 * 83  # every a (19 edges, 64 random values), only some b


def test_without_torch_or_a_compiler_one_paragraph_says_what_to_install(run, tmp_path: Path, monkeypatch):
    """No traceback: one error naming what is missing and the command that installs it."""
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    res = run("try", "heaviside")
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.split())
    assert text.startswith("error: mpsgen try runs the functor compiled on this machine") and "Traceback" not in res.output
    assert f"torch, which {sys.executable} cannot import" in text
    assert f"{trial.install_torch_command()})" in text and "C++17 compiler" not in text
    monkeypatch.setenv("PATH", str(tmp_path))  # and no C++ compiler either: both are named
    text = " ".join(run("try", "heaviside").output.split())
    assert "torch, which" in text and "a C++17 compiler on PATH (g++, clang++, c++; install one: sudo apt-get install -y g++)" in text
    monkeypatch.delitem(sys.modules, "torch")
    monkeypatch.setitem(sys.modules, "torch", torch)
    res = run("try", "heaviside")
    text = " ".join(res.output.split())
    assert res.exit_code == 2 and "torch" not in text.split("needs", 1)[1] and "C++17 compiler" in text, res.output
    assert trial.install_compiler_command("Darwin") == "xcode-select --install"
    assert trial.install_torch_command("Darwin").endswith("-m pip install torch")
    assert trial.install_torch_command("Linux").endswith("-m pip install torch --index-url https://download.pytorch.org/whl/cpu")


def test_values_go_to_the_program_bit_for_bit_without_numpy(monkeypatch):
    """tensor_bytes writes each dtype's bytes through torch alone (numpy is not needed), and tensor_from_bytes
    reads them back to the same bits: NaN payloads, -0.0, denormals, complex parts."""
    import struct

    monkeypatch.setitem(sys.modules, "numpy", None)
    assert trial.tensor_bytes(torch, torch.tensor([1.5, -0.0, float("inf")])) == struct.pack("=3f", 1.5, -0.0, float("inf"))
    assert trial.tensor_bytes(torch, torch.arange(10)[3:6]) == struct.pack("=3q", 3, 4, 5)  # a view: its own values only
    assert trial.tensor_bytes(torch, torch.tensor([], dtype=torch.int32)) == b""
    bits = torch.tensor([0, 1, 0x7C01, -32768, 0x7F7F, -1], dtype=torch.int16)
    for dtype in (torch.float16, torch.bfloat16):
        t = bits.view(dtype)
        assert torch.equal(trial.tensor_from_bytes(torch, trial.tensor_bytes(torch, t), dtype).view(torch.int16), bits)
    for dtype in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool, torch.float32):
        t = torch.tensor([0, 1, 2, 100, 127], dtype=torch.int64).to(dtype)
        assert torch.equal(trial.tensor_from_bytes(torch, trial.tensor_bytes(torch, t), dtype), t)
    z = torch.complex(torch.tensor([1.0, -0.0, float("nan")]), torch.tensor([float("inf"), 2.5, 0.0]))
    back = trial.tensor_from_bytes(torch, trial.tensor_bytes(torch, z), torch.complex64)
    assert torch.equal(torch.view_as_real(back).view(torch.int32), torch.view_as_real(z).view(torch.int32))
