"""One scanner of .mm/.metal facts: the edits' views (tree.mm, tree.metal) and check's
index read the same facts from tree.clike / tree.host / tree.kernels."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mpsgen.report.practice import PRACTICE_TREE
from mpsgen.tree.clike import Lines, scan_defines
from mpsgen.tree.host import scan_host
from mpsgen.tree.metal import scan_metal
from mpsgen.tree.mm import scan_mm

REPO = Path(__file__).resolve().parents[2]
SOURCES = sorted(
    p for ext in ("*.mm", "*.metal", "*.h") for base in (PRACTICE_TREE, REPO / "tests" / "golden") for p in base.rglob(ext)
)


@pytest.mark.parametrize("path", [p for p in SOURCES if p.suffix == ".mm"], ids=lambda p: p.name)
def test_edits_read_the_host_facts_check_reads(path: Path):
    text = path.read_text()
    mm, host = scan_mm(text), scan_host(str(path), text)
    assert sorted((d.stub, d.function, d.line + 1, d.via_macro) for d in mm.dispatches) == sorted(
        (d.stub, d.function, d.line, d.via) for d in host.dispatches
    )
    assert sorted((u.kind, u.name, u.line + 1) for u in mm.kernel_names) == sorted((u.kind, u.name, u.line) for u in host.uses)
    # every MPSGraph implementation an edit may remove is a definition check knows
    defined = {(d.name, d.line) for d in host.definitions}
    assert {(i.kernel, i.start_line + 1) for i in mm.impls} <= defined
    from mpsgen.tree.pipelines import pipeline_requests

    custom = bool(pipeline_requests(str(path), text))  # a custom kernel's host (its pipelines by name)
    assert mm.impls or (mm.dispatches and (mm.kernel_names or custom)), "each sample holds MPSGraph code or kernels"  # not vacuous
    for impl in mm.impls:
        assert impl.end_line >= impl.start_line


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_one_define_scanner(path: Path):
    text = path.read_text()
    assert scan_metal(text).macros == scan_defines(text, Lines(text))[0]


def test_macro_bodies_keep_their_string_literals():
    """The edits' macro bodies used to blank string literals (``#NAME "_strided_"`` lost its
    text); they are the shared scanner's now."""
    text = '#define REG(NAME, T) \\\n  template [[host_name(#NAME "_strided_" #T)]] kernel void k<T>(uint)\n'
    assert '"_strided_"' in scan_metal(text).macros["REG"].body


def test_a_macro_defined_twice_is_macro_text_both_times():
    """A name #define'd twice (an #undef between): the first body's TORCH_IMPL_FUNC is not an
    implementation of the file, in the edits' view as in check's."""
    text = (
        "#define MAKE(func_out) \\\n"
        "  TORCH_IMPL_FUNC(func_out)(const Tensor& self) { \\\n"
        "  }\n"
        "#undef MAKE\n"
        "#define MAKE(func_out) \\\n"
        "  TORCH_IMPL_FUNC(func_out)(const Tensor& self) { \\\n"
        "  }\n"
        "MAKE(acosh_out_mps);\n"
    )
    impls = scan_mm(text).impls
    assert [(i.kernel, i.form, i.start_line) for i in impls] == [("acosh_out_mps", "macro_instance", 7)]
    assert [(d.name, d.form) for d in scan_host("x.mm", text).definitions] == [("acosh_out_mps", "impl_macro")]


def test_the_index_parses_nothing_itself():
    """tree/index.py builds check's and explain's index from the tree scanners: no regular expression of its
    own at module level, and its facts come from tree.host / tree.kernels / tree.native_rows."""
    source = (REPO / "mpsgen" / "tree" / "index.py").read_text()
    module = ast.parse(source)
    for node in module.body:
        if isinstance(node, ast.Assign):
            assert "re.compile" not in ast.unparse(node.value), ast.unparse(node)
    imported = {n.module for n in ast.walk(module) if isinstance(n, ast.ImportFrom)}
    assert {"mpsgen.tree.host", "mpsgen.tree.kernels", "mpsgen.tree.native_rows"} <= imported
    assert len(source.splitlines()) < 300


def test_an_instance_of_a_macro_writing_a_plain_function_is_an_mpsgraph_impl():
    """Upstream's UnaryOps.mm has had a macro writing `Tensor& func_out(...) { ... }` (not a
    TORCH_IMPL_FUNC) with instances such as `CREATE_MPS_UNARY_TORCH_IMPL_FUNC(abs_out_mps,
    absolute)`: a migration must find that instance to remove it."""
    text = (
        "#define MAKE_UNARY(func_out, graph_op) \\\n"
        "  Tensor& func_out(const Tensor& self, Tensor& output) { \\\n"
        "    return output; \\\n"
        "  }\n"
        "\n"
        "MAKE_UNARY(abs_out_mps, absolute)\n"
        "MAKE_UNARY(helper, absolute)\n"
    )
    impls = scan_mm(text).impls
    assert [(i.kernel, i.form, i.start_line, i.macro) for i in impls] == [("abs_out_mps", "macro_instance", 5, "MAKE_UNARY")]


def test_whole_word_search_is_the_regex_one():
    """clike._has_word finds a whole word as re.search(r"(?<!\\w)word(?!\\w)") does."""
    import re

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from mpsgen.tree.clike import _has_word

    @settings(max_examples=500, deadline=None)
    @given(st.text(alphabet="ab_1 (),é\t#", max_size=14), st.text(alphabet="ab_1", min_size=1, max_size=3))
    def same(line: str, word: str) -> None:
        assert _has_word(line, word) == bool(re.search(rf"(?<!\w){re.escape(word)}(?!\w)", line))

    same()


def test_a_reversed_pattern_finds_what_the_forward_one_finds():
    """host's search for definitions in macro expansions runs backwards from the "{"
    (clike.ReversedPattern): the same groups, in the same order, as the forward regex."""
    import re

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from mpsgen.tree.host import _EXPANDED_DEF

    forward = re.compile(_EXPANDED_DEF.pattern)
    pieces = st.sampled_from(["a", "b", "_", " ", "(", ")", "{", "}", "const", "\x00", "\n", "f(x) {", ") const {", "g(", "é"])

    @settings(max_examples=3000, deadline=None)
    @given(st.lists(pieces, max_size=16))
    def same(parts: list[str]) -> None:
        text = "".join(parts)
        assert _EXPANDED_DEF.groups_in(text) == [m.groups() for m in forward.finditer(text)]

    same()


def test_macro_expansion_substitutes_as_the_token_by_token_form():
    """MacroDef.expand searches only for the parameters' identifiers: the same text as
    substituting token by token (every identifier looked up), with # and ## and a "..."."""
    import re

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from mpsgen.tree.clike import MacroDef

    def token_by_token(params: tuple[str, ...], body: str, args: list[str]) -> str:
        values = dict(zip(params, args))
        body = re.sub(r"(?<!#)#\s*([A-Za-z_]\w*)", lambda m: f'"{values[m.group(1)]}"' if m.group(1) in values else m.group(0), body)
        body = re.sub(r"\b([A-Za-z_]\w*)\b", lambda m: values.get(m.group(1), m.group(1)), body)
        return re.sub(r"\s*##\s*", "", body)

    words = st.sampled_from(["a", "ab", "b", "x1", "_", "...", "é", "1a", "a_b"])
    body_parts = st.sampled_from(["a", "ab", "b", "x1", " ", "#", "##", "(", ")", ",", "é", "1", "_", "...", '"', "a_b", "\\n"])

    @settings(max_examples=3000, deadline=None)
    @given(st.lists(words, max_size=3, unique=True), st.lists(body_parts, max_size=14), st.lists(st.sampled_from(["q", "a", "##", "1", "ab c", ""]), max_size=3))
    def same(params: list[str], parts: list[str], args: list[str]) -> None:
        d = MacroDef("M", tuple(params), "".join(parts), 0, 0)
        assert d.expand(args) == token_by_token(tuple(params), d.body, args)

    same()


def test_macro_instances_are_found_as_the_regex_per_name_found_them():
    """clike.find_statements looks for NAME[ \\t]*( with str.find: the same statements as a
    regex compiled per name (its former form), on text with names inside words, repeated
    names, blanks, comments, #defines and nested parentheses."""
    import re

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from mpsgen.tree import clike
    from mpsgen.tree.clike import Lines, find_statements, raw_defines

    def by_regex(text: str, lines: Lines, names: list[str], spans) -> list:
        out = []
        for name in names:
            for m in re.finditer(re.escape(name) + r"[ \t]*\(", text):
                start = m.start()
                line_start = text.rfind("\n", 0, start) + 1
                if line_start != start and text[line_start:start].strip():
                    continue
                if clike.inside_spans(spans, start) or lines.in_block_comment(start):
                    continue
                st_ = clike.statement_at(text, lines, name, m.end() - 1, start)
                if st_:
                    out.append(st_)
        return sorted(out, key=lambda s: s.line)

    pieces = st.sampled_from(
        ["M", "MM", "M2", "xM", "N", "(", ")", "(a, b)", "(f(a), b)", ";", " ", "\t", "\n", "  ", "/*", "*/", "// ", "#define M(x) x\n", "\\\n", "{", "x"]
        + ["M(a);\n", "M (a, b);\n", "  MM\t(x)\n", "N(a) {", "M2((a), b)"]
    )

    @settings(max_examples=3000, deadline=None)
    @given(st.lists(pieces, max_size=20), st.lists(st.sampled_from(["M", "MM", "M2", "N"]), min_size=1, max_size=3, unique=True))
    def same(parts: list[str], names: list[str]) -> None:
        text = "".join(parts)
        lines = Lines(text)
        spans = raw_defines(text, lines)[1]
        assert find_statements(text, Lines(text), names, spans) == by_regex(text, lines, names, spans)

    same()
