"""What a native_functions row runs: row -> its CPU/CUDA kernel -> the C++ function that
defines it -> the dispatch stub that function hands its iterator to -> the stub's ``DECLARE_DISPATCH``.

This is the one resolver of row -> stub; ``new-op``, ``migrate-from-mpsgraph`` and ``check``
all ask it. Where the tree has the ``.cpp`` files (a real checkout), the stub is read from the
kernel's definition, in every way upstream's sources hand a stub to a kernel:

* the definition: ``TORCH_IMPL_FUNC(<kernel>)`` for a structured row, written out or made by
  a macro instance (``CREATE_UNARY_TORCH_IMPL_FUNC(acos_out, acos_stub)``, any ``#define`` of
  the tree whose body is one); a plain function ``Tensor& <kernel>(...) { ... }`` for the
  others, the overload whose parameters are the row's schema arguments where several share
  the name (``bitwise_and_out`` is a macro-made TORCH_IMPL_FUNC and a Scalar overload);
* in its body, a declared stub called (``acos_stub(device_type(), *this)``) or handed to any
  helper as an argument (``unary_op_impl_out(result, self, conj_physical_stub)``: the
  argument is read, whatever the helper is called);
* else a stub the ``.cpp`` helpers it calls name themselves (``at::native::where_self_out``);
* else the op it forwards to through the dispatcher (``at::pow_out(out, ..., exp)``,
  ``at::clamp_min(self, 0)``): that op's row is resolved in turn.

Where the ``.cpp`` files are absent (the wheel ships headers only), the declared stubs are
matched by name, and the result says which rule chose the stub.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, NamedTuple

from mpsgen.tree import NATIVE_DIR, NATIVE_FUNCTIONS, PytorchTree
from mpsgen.tree.native_rows import Dispatch, scan_rows
from mpsgen.tree.source import close_bracket, mask_c_comments_and_strings, match_close, split_args
from mpsgen.tree.stubs import declared_stubs
from mpsgen.tree.walk import walk_files

if TYPE_CHECKING:
    import mmap

    from mpsgen.tree.native_yaml import NativeFunction

HOST_KEYS = frozenset({"CPU", "CUDA"})

# name rules, in the order they are tried when no definition was read
RULE_DEFINITION = "definition"
RULE_EXACT = "exact name"
RULE_MODULE = "name without python_module prefix"
RULE_OVERLOAD = "overload name"
RULE_KERNEL = "kernel name"

_IMPL_FUNC = re.compile(r"\bTORCH_IMPL_FUNC\s*\(\s*(\w+)\s*\)")
_DEFINE_WITH_IMPL_PATTERN = r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)((?:[^\n]*\\\n)*[^\n]*)"
_DEFINE_WITH_IMPL = re.compile(_DEFINE_WITH_IMPL_PATTERN, re.M)
# a word called or handed on as an argument: ``name(``, ``name,`` or ``name)`` (not ``name.f()``)
_NAMED = re.compile(r"(?<![\w.])(?<!->)([A-Za-z_]\w*)\s*(?=[(),])")
_SKIP_DIRS = frozenset({"cpu", "mps", "cuda", "hip", "miopen", "cudnn", "mkldnn", "vulkan", "metal", "quantized", "sparse", "nested"})
class KernelDefinition(NamedTuple):
    """Where a CPU/CUDA kernel is defined and the declared stubs its body names (calls, or
    hands to a helper as an argument)."""

    name: str
    path: str
    line: int  # 1-based
    stubs: tuple[str, ...]
    via: str | None = None  # the macro whose instance defines it
    # the body returns before its stub call for integral and bool inputs (nan_to_num_out copies
    # them): the stub, and the kernel registered for it, only ever see floating types
    copies_integral: bool = False
    impl: bool = False  # a TORCH_IMPL_FUNC (a structured row's kernel), not a plain function
    params: str = ""  # the parameter list as written (a plain function's: how overloads differ)
    body: str = ""  # from its opening brace, line comments removed

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


_INTEGRAL_EARLY_RETURN = re.compile(
    r"\bif\s*\(\s*(?:c10::|at::)?isIntegralType\s*\([^;{}]*?\btrue\b[^;{}]*?\)\s*\)\s*\{[^{}]*\breturn\b[^{}]*\}"
)


def _copies_integral(body: str, stubs: tuple[str, ...]) -> bool:
    """Whether ``body`` returns for integral and bool inputs (``isIntegralType(t, true)``)
    before it names (calls, or hands on) any of its ``stubs``."""
    m = _INTEGRAL_EARLY_RETURN.search(_LINE_COMMENT.sub("", body))
    if m is None or not stubs:
        return False
    calls = [c.start() for s in stubs for c in re.finditer(rf"\b{re.escape(s)}\s*[(),]", _LINE_COMMENT.sub("", body))]
    return bool(calls) and m.end() <= min(calls)


class StubResolution(NamedTuple):
    """The stub a row's CPU/CUDA kernel runs, and how that was decided."""

    row: str
    op: str
    kernel: str | None  # the CPU/CUDA kernel (None: the row has none)
    stub: str | None
    rule: str | None  # RULE_*; None when nothing was found
    declared_at: tuple[str, int] | None = None  # the stub's DECLARE_DISPATCH (header, line)
    definition: KernelDefinition | None = None
    candidates: tuple[str, ...] = ()  # names tried (name rules) or stubs called (definition)
    foreign: bool = False  # the stub is another op's (sub_out -> add_stub)
    ambiguous: tuple[str, ...] = ()  # the definition calls several declared stubs
    how: str = ""  # how the definition reaches the stub, when not by calling it ("passes x_stub to f")
    reason: str = ""  # why no stub was found, when the generic sentences would not say it

    @property
    def verified(self) -> bool:
        return self.rule == RULE_DEFINITION

    def describe(self) -> str:
        """One line for notes and refusals."""
        if self.kernel is None:
            return f"{self.row} has no CPU/CUDA kernel"
        if self.stub is None:
            if self.reason:
                return self.reason
            if self.ambiguous:
                return (
                    f"{self.kernel} ({self.definition.where}) calls several stubs: {', '.join(self.ambiguous)}"  # type: ignore[union-attr]
                )
            if self.definition is not None:
                return (
                    f"{self.kernel} ({self.definition.where}) calls no declared dispatch stub, hands none to a helper "
                    "and forwards to no other op's kernel"
                )
            return f"no declared stub matches {self.kernel} (tried {', '.join(self.candidates)})"
        decl = f"{self.declared_at[0]}:{self.declared_at[1]}" if self.declared_at else "not declared"
        if self.definition is not None:
            via = f" via {self.definition.via}" if self.definition.via else ""
            how = f"{self.kernel} ({self.definition.where}{via}) {self.how or 'calls ' + self.stub}"
        else:
            how = f"{self.stub} chosen by {self.rule} for {self.kernel} (no .cpp in this tree defines it)"
        return f"{how}; DECLARE_DISPATCH at {decl}"


def row_op(entry: NativeFunction) -> str:
    """The op a row belongs to: ``abs_`` -> ``abs``."""
    return entry.base[:-1] if entry.base.endswith("_") else entry.base


def host_kernel(entry: NativeFunction) -> str | None:
    """The row's CPU/CUDA kernel: the shared line's, else the CPU line's, else the CUDA line's."""
    for d in entry.dispatch:
        if HOST_KEYS <= set(d.keys):
            return d.kernel.rpartition("::")[2]
    for key in ("CPU", "CUDA"):
        for d in entry.dispatch:
            if key in d.keys:
                return d.kernel.rpartition("::")[2]
    return None


# python_module values of native_functions.yaml that prefix op names; used for rows read without
# their python_module (check's fast row scanner keeps only names and dispatch lines)
_MODULE_PREFIXES = ("special", "linalg", "fft")


def _module(entry) -> str | None:
    module = getattr(entry, "python_module", None)
    if module is None and not hasattr(entry, "python_module"):
        module = next((m for m in _MODULE_PREFIXES if entry.base.startswith(m + "_")), None)
    return module


def name_candidates(entry: NativeFunction, kernel: str) -> list[tuple[str, str]]:
    """(stub name, rule) in the order the name rules try them."""
    op = row_op(entry)
    out: list[tuple[str, str]] = [(f"{op}_stub", RULE_EXACT)]
    module = _module(entry)
    if module and op.startswith(module + "_"):
        out.append((f"{op[len(module) + 1:]}_stub", RULE_MODULE))
    overload = re.sub(r"_?out$", "", entry.overload)
    if overload:
        out.append((f"{op}_{overload}".lower() + "_stub", RULE_OVERLOAD))
    stem = kernel[: -len("_out")] if kernel.endswith("_out") else kernel
    out.append((f"{stem}_stub", RULE_KERNEL))
    out.append((f"{stem.lower()}_stub", RULE_KERNEL))
    seen: set[str] = set()
    return [(n, r) for n, r in out if not (n in seen or seen.add(n))]


def _is_own_stub(stub: str, entry: NativeFunction) -> bool:
    """Whether ``stub`` is named after the row's op (``laguerre_polynomial_l_stub`` for
    special_laguerre_polynomial_l, ``pow_tensor_tensor_stub`` for pow, ``lerp_kernel_scalar_weight``
    for lerp), as opposed to another op's (``add_stub`` for sub)."""
    op = row_op(entry).lower()
    names = {op}
    module = _module(entry)
    if module and op.startswith(module + "_"):
        names.add(op[len(module) + 1 :])
    s = stub.lower()
    return any(s == f"{n}_stub" or s.startswith(n + "_") for n in names)


# A definition at the start of a line (PyTorch does not indent namespace contents, and
# clang-format puts a top-level function's closing brace in column 0): TORCH_IMPL_FUNC(k)
# with its parameter list, or a plain function ``Tensor& k(...) {``; the body runs to the
# first "}" in column 0, or to the brace closing its own "{" where that comes first (a
# definition on one line).
_TOP_DEFINITION = re.compile(
    r"^(?:TORCH_IMPL_FUNC\s*\(\s*(\w+)\s*\)|(?:[\w:<>,&*]+[ \t]+)+[&*]?(\w+))\s*\([^;{}]*\)\s*(?:const\s*)?\{(.*?)^\}",
    re.M | re.S,
)
_LINE_COMMENT = re.compile(r"//[^\n]*")
_NOT_FUNCTIONS = frozenset({"if", "for", "while", "switch", "return", "namespace", "struct", "class", "else"})


# Where a definition may start: a line in column 0 opening with a word, whose last word
# before the first "(" names it (TORCH_IMPL_FUNC: its argument does). One search from each
# newline over a .cpp's bytes, mapped, never copied nor decoded (upstream's native/*.cpp are
# ~6 MB, 3.7 MB of them one table of numbers); _TOP_DEFINITION then decides, at the lines of
# a kernel asked about only. (_TOP_DEFINITION over whole files cost ~90 ms a MB on
# template-heavy code: its return-type loop is tried, and backtracks, at every line.)
_LINE_BODY = r"(?:TORCH_IMPL_FUNC[ \t]*\([ \t]*(\w+)|[\w:][^\n(;{}=]*[ \t&*]([A-Za-z_]\w*)[ \t]*\()"
# (compiled at first use: check's child process scans the .cpp files)
_DEFINITION_LINE = re.compile("\n" + _LINE_BODY)
_DEFINITION_LINE_BYTES = re.compile(("\n" + _LINE_BODY).encode())
_FIRST_LINE_BYTES = re.compile(_LINE_BODY.encode())
_DEFINE_WITH_IMPL_BYTES = re.compile(_DEFINE_WITH_IMPL_PATTERN.encode(), re.M)


def _mapped(path: str) -> bytes | mmap.mmap:
    """A file's bytes, mapped read-only (the page cache's own pages: no copy); nothing for
    what is not a regular file (a FIFO named *.cpp is not waited on)."""
    import mmap  # (local: check --changed with no relevant change loads no mmap)

    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        try:
            return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        except (ValueError, OSError):  # empty, or a file that cannot be mapped
            with os.fdopen(os.dup(fd), "rb") as fh:
                return fh.read()
    finally:
        os.close(fd)


def _makes_impl_funcs(raw: bytes | mmap.mmap) -> bool:
    """Whether a file defines a function-like macro whose body holds a TORCH_IMPL_FUNC (what
    :func:`_macro_definitions` expands), found from the literal words (C speed)."""
    if raw.find(b"TORCH_IMPL_FUNC") < 0:
        return False
    at = raw.find(b"define")
    while at >= 0:
        line_start = raw.rfind(b"\n", 0, at) + 1
        if raw[line_start:at].strip(b" \t") == b"#":
            m = _DEFINE_WITH_IMPL_BYTES.match(raw, line_start)
            if m is not None and b"TORCH_IMPL_FUNC" in m.group(3):
                return True
        at = raw.find(b"define", at + 6)
    return False


def _add_start(starts: dict[str, list[tuple[int, int]]], name: str, i: int, at: int) -> None:
    got = starts.get(name)
    if got is None:
        starts[name] = [(i, at)]
    else:
        got.append((i, at))


def scan_candidates(files: list[tuple[str, str]]) -> tuple[dict[str, list[tuple[int, int]]], list[int], list[int]]:
    """Each file's candidate definition lines (name -> [(file index, line start)], in file
    order), the files whose macros may make a TORCH_IMPL_FUNC, and the files defining a
    structured meta function (TORCH_META_FUNC)."""
    starts: dict[str, list[tuple[int, int]]] = {}
    macro_files = []
    meta_files = []
    for i, (_rel, path) in enumerate(files):
        raw = _mapped(path)
        first = _FIRST_LINE_BYTES.match(raw)
        found = [(first.group(1) or first.group(2), 0)] if first is not None else []
        found += [(m.group(1) or m.group(2), m.start() + 1) for m in _DEFINITION_LINE_BYTES.finditer(raw)]
        for name, at in found:  # at: the line's offset (the match starts at the newline before it)
            _add_start(starts, name.decode("ascii"), i, at)
        if _makes_impl_funcs(raw):
            macro_files.append(i)
        if raw.find(b"TORCH_META_FUNC") >= 0:
            meta_files.append(i)
        if not isinstance(raw, bytes):
            raw.close()
    return starts, macro_files, meta_files


class _CppIndex:
    """Kernel definitions of the tree's native .cpp files, found at first use: every file is
    scanned once and its column-0 lines that may open a definition are indexed by name; a
    kernel asked about is then read closely at its own lines only (the first definition in
    file order wins, a file's plain definitions before its macro instances)."""

    def __init__(self, files: list[tuple[str, str]], stubs: dict[str, tuple[str, int]]):
        self.files = files  # (rel, path)
        self._meta: dict[str, tuple[int, str] | None] = {}  # op -> its meta function's inputs
        self._meta_files: list[int] = []  # files defining a TORCH_META_FUNC (found by _index)
        self.stubs = stubs
        self._indexed = False
        self._texts: dict[int, str] = {}  # decoded, for the files read closely
        self._starts: dict[str, list[tuple[int, int]]] = {}  # name -> (file index, line start)
        self._macro_files: list[int] = []  # files defining a macro whose body has a TORCH_IMPL_FUNC
        self._macros: dict[int, dict[str, KernelDefinition]] = {}  # file index -> macro-made definitions
        self._macro_names: dict[str, list[int]] | None = None  # name -> files of _macros making it
        self._found: dict[str, tuple[KernelDefinition, ...]] = {}

    def _stubs_called(self, body: str) -> tuple[str, ...]:
        """The declared stubs ``body`` calls or hands to a helper as an argument, in order."""
        body = _LINE_COMMENT.sub("", body)
        return tuple(dict.fromkeys(n for n in _NAMED.findall(body) if n in self.stubs))

    def _index(self) -> None:
        if self._indexed:
            return
        self._indexed = True
        self._starts, self._macro_files, self._meta_files = scan_candidates(self.files)

    def _text(self, i: int) -> str:
        """File ``i`` decoded. Its candidate lines were found in its bytes: where characters
        of several bytes make offsets differ, they are found again in the text."""
        text = self._texts.get(i)
        if text is None:
            with open(self.files[i][1], "rb") as fh:
                raw = fh.read()
            text = self._texts[i] = raw.decode("utf-8", "replace")
            if len(text) != len(raw):
                for name, starts in self._starts.items():
                    starts[:] = [s for s in starts if s[0] != i]
                for m in _DEFINITION_LINE.finditer("\n" + text):  # m.start(): the line's offset in text
                    _add_start(self._starts, m.group(1) or m.group(2), i, m.start())
                for starts in self._starts.values():
                    starts.sort()
        return text

    def _made_by_macros(self, i: int) -> dict[str, KernelDefinition]:
        made = self._macros.get(i)
        if made is None:
            made = self._macros[i] = {}
            text = self._text(i)
            if "TORCH_IMPL_FUNC" in text:
                rel = self.files[i][0]
                for name, start, body, via in _macro_definitions(text):
                    if name not in made:
                        body = _LINE_COMMENT.sub("", body)
                        stubs = self._stubs_called(body)
                        made[name] = KernelDefinition(
                            name, rel, text.count("\n", 0, start) + 1, stubs, via, _copies_integral(body, stubs), True, "", body
                        )
        return made

    def _macro_made(self) -> dict[str, list[int]]:
        """Name -> the files whose macro instances make a TORCH_IMPL_FUNC of it (every such file
        expanded at the first kernel asked about, once)."""
        if self._macro_names is None:
            self._macro_names = {}
            for i in self._macro_files:
                for name in self._made_by_macros(i):
                    self._macro_names.setdefault(name, []).append(i)
        return self._macro_names

    def meta_inputs(self, op: str) -> tuple[int, str] | None:
        if op not in self._meta:
            self._index()  # (the scan that finds the files with meta functions)
            self._meta[op] = self._meta_inputs(op)
        return self._meta[op]

    def _meta_inputs(self, op: str) -> tuple[int, str] | None:
        wanted = re.compile(rf"\bTORCH_META_FUNC\s*\(\s*{re.escape(op)}\s*\)")  # (clang-format may break inside)
        for i in self._meta_files:
            rel = self.files[i][0]
            text = self._text(i)
            if op not in text:
                continue
            m = wanted.search(text)
            if m is None:
                continue
            masked = mask_c_comments_and_strings(text)
            brace = masked.find("{", masked.find(")", m.end()) + 1)
            end = match_close(masked, brace)
            body = masked[brace : end if end > 0 else len(masked)]
            where = f"{rel}:{text.count(chr(10), 0, m.start()) + 1}"
            helper = re.search(r"\bbuild_(?:borrowing_)?(unary|binary|ternary|comparison)(?:_float|_force_boolean)?_op\s*\(", body)
            if helper is not None:
                return {"unary": 1, "binary": 2, "comparison": 2, "ternary": 3}[helper.group(1)], where
            added = len(re.findall(r"\.add_(?:owned_)?(?:const_)?input\s*\(", body))
            return (added, where) if added else None
        return None

    def find(self, kernel: str) -> KernelDefinition | None:
        """The first definition of ``kernel`` in file order (a file's written-out definitions
        before its macro instances), or None."""
        found = self.find_all(kernel)
        return found[0] if found else None

    def find_all(self, kernel: str) -> tuple[KernelDefinition, ...]:
        """Every definition of ``kernel`` in the tree's .cpp files: TORCH_IMPL_FUNCs (written
        out, or made by a macro instance) and plain functions (overloads included), file by file."""
        try:
            return self._found[kernel]
        except KeyError:
            pass
        found: list[KernelDefinition] = []
        if kernel not in _NOT_FUNCTIONS:
            self._index()
            starts = self._starts.get(kernel, ())
            macro_files = self._macro_made().get(kernel, ())
            for i in sorted({i for i, _ in starts} | set(macro_files)):
                text = self._text(i)
                for _, at in [s for s in self._starts.get(kernel, ()) if s[0] == i]:
                    m = _TOP_DEFINITION.match(text, at)
                    if m is not None and (m.group(1) or m.group(2)) == kernel:
                        # the body ends at the brace closing its "{" when that comes first: a
                        # one-line definition's "}" is not in column 0, and the next
                        # definitions' bodies are not its own
                        close = close_bracket(text, m.start(3) - 1)
                        body = text[m.start(3) : close] if 0 <= close < m.end(3) else m.group(3)
                        body = _LINE_COMMENT.sub("", body)
                        stubs = self._stubs_called(body)
                        opened = text.find("(", m.end(1) if m.group(1) else m.end(2))
                        params = text[opened + 1 : text.rfind(")", opened, m.start(3))]
                        found.append(
                            KernelDefinition(
                                kernel, self.files[i][0], text.count("\n", 0, at) + 1, stubs, None,
                                _copies_integral(body, stubs), m.group(1) is not None, " ".join(params.split()), body,
                            )
                        )
                if i in macro_files:
                    found.append(self._made_by_macros(i)[kernel])
        result = self._found[kernel] = tuple(found)
        return result


def _macro_definitions(text: str) -> Iterable[tuple[str, int, str, str]]:
    """(kernel, offset, body, macro) for each instance of a #define whose body is a
    TORCH_IMPL_FUNC with the kernel as a parameter."""
    # #define lines and instances start a line, so comments cannot hide them: the raw text is
    # searched (masking megabytes of .cpp for a few macros would cost more than all the rest)
    macros = []
    for m in _DEFINE_WITH_IMPL.finditer(text):
        body = m.group(3).replace("\\\n", "\n")
        if "TORCH_IMPL_FUNC" not in body:
            continue
        params = [p.strip() for p in m.group(2).split(",")]
        macros.append((m.group(1), params, body))
    for name, params, body in macros:
        for inst in re.finditer(rf"^[ \t]*{re.escape(name)}\s*\(", text, re.M):
            close = close_bracket(text, inst.end() - 1)
            if close < 0:
                continue
            args = [a.strip() for a in text[inst.end() : close].split(",")]
            if len(args) != len(params):
                continue
            values = dict(zip(params, args))
            expanded = re.sub(r"\b(\w+)\b", lambda w: values.get(w.group(1), w.group(1)), body)
            expanded = re.sub(r"\s*##\s*", "", expanded)
            for impl in _IMPL_FUNC.finditer(expanded):
                open_brace = expanded.find("{", impl.end())
                if open_brace < 0:
                    continue
                end = close_bracket(expanded, open_brace)
                yield impl.group(1), inst.start(), expanded[open_brace : end + 1 if end >= 0 else len(expanded)], name


# -- the kinds of arguments, in schemas and in C++ parameter lists --------------------------------
# T tensor, T? optional tensor, S scalar, S? optional scalar, o anything else; N (arguments only)
# a number literal, which C++ converts to a Scalar or to an int/float parameter
_KIND_WORDS = {"T": "Tensor", "T?": "Tensor?", "S": "Scalar", "S?": "Scalar?", "o": "other"}
_SCHEMA_KINDS = {"Tensor": "T", "Tensor?": "T?", "Scalar": "S", "Scalar?": "S?"}
_CPP_KINDS = {
    "Tensor": "T", "Scalar": "S", "optional<Tensor>": "T?", "OptionalTensorRef": "T?",
    "optional<Scalar>": "S?", "OptionalScalarRef": "S?",
}
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_CPP_NOISE = re.compile(r"\bconst\b|\b(?:std|c10|at)::|[\s&*]")  # what a type's kind does not depend on
_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[fFlLuU]*")
_CAST = re.compile(r"(?:const|static|reinterpret)_cast\s*<([^<>]*(?:<[^<>]*>)?[^<>]*)>\s*\(")
# f( / at::native::f( / native::f( (group 1: the qualifier)
_QUALIFIED_CALL = re.compile(r"(?<![\w.])(?<!->)((?:\w+\s*::\s*)*)([A-Za-z_]\w*)\s*\(")
# at::f( through the dispatcher (not at::native::, at::_ops::, at::detail::)
_DISPATCHER_CALL = re.compile(r"(?<![\w:])at::(?!native::|_ops::|detail::|cpu::|cuda::|meta::)([A-Za-z_]\w*)\s*\(")


def _schema_args(func: str) -> list[tuple[str, bool, bool]]:
    """(kind, is an out argument, has a default) of each argument of a ``func:`` schema."""
    start = func.index("(")
    depth, end = 0, len(func)
    for i in range(start, len(func)):
        depth += func[i] == "("
        depth -= func[i] == ")"
        if depth == 0:
            end = i
            break
    out, keyword_only = [], False
    for raw in re.split(r",\s*(?![^\[]*\])", func[start + 1 : end]):
        raw = raw.strip()
        if raw == "*":
            keyword_only = True
            continue
        if " " not in raw:
            continue
        decl, eq, _default = raw.partition("=")
        typ = decl.strip().rsplit(" ", 1)[0]
        mutable = "!" in typ
        typ = re.sub(r"\([^)]*\)", "", typ)
        out.append((_SCHEMA_KINDS.get(typ, "o"), mutable and keyword_only, bool(eq)))
    return out


def _schema_kinds(func: str) -> tuple[str, ...]:
    """The kinds of a schema's arguments in C++ order (a native function takes its out
    tensors last, as the schema lists them)."""
    return tuple(k for k, _o, _d in _schema_args(func))


def _cpp_param(param: str) -> tuple[str, str]:
    """(kind, name) of one C++ parameter (``const Tensor& self`` -> ("T", "self"))."""
    param = _BLOCK_COMMENT.sub(" ", param).split("=", 1)[0].strip()
    words = re.findall(r"[A-Za-z_]\w*", param)
    name = ""
    if len([w for w in words if w != "const"]) >= 2 and re.search(r"[A-Za-z_]\w*\s*$", param):
        name = words[-1]
        param = param[: param.rstrip().rfind(name)]
    return _CPP_KINDS.get(_CPP_NOISE.sub("", param), "o"), name


def _cpp_kinds(params: str) -> tuple[str, ...]:
    return tuple(_cpp_param(p)[0] for p in split_args(params) if p.strip() and p.strip() != "void")


def _param_kinds(params: str) -> dict[str, str]:
    return {name: kind for kind, name in map(_cpp_param, split_args(params)) if name}


def _arg_kind(arg: str, params: dict[str, str]) -> str | None:
    """The kind of an argument the caller passes, where its text shows it: one of the
    caller's parameters, a number, a cast (``const_cast<Tensor&>(out)``), ``t.to(...)`` of a
    tensor parameter; None when it does not."""
    arg = arg.strip()
    if arg in params:
        return params[arg]
    if _NUMBER.fullmatch(arg):
        return "N"
    cast = _CAST.match(arg)
    if cast is not None:
        return _CPP_KINDS.get(_CPP_NOISE.sub("", cast.group(1)), None)
    method = re.fullmatch(r"(\w+)\.to\(.*\)", arg, re.S)
    if method is not None and params.get(method.group(1)) == "T":
        return "T"
    return None


def _fits(given: str | None, wanted: str) -> bool:
    if given is None:
        return True
    if given == "N":
        return wanted in ("S", "S?", "o")
    return given == wanted or given + "?" == wanted


def _passed_to(body: str, stubs: tuple[str, ...]) -> str:
    """The function a body hands its one stub to as an argument (``unary_op_impl_out``), or ""
    when it calls the stub itself."""
    stub = stubs[0]
    if re.search(rf"(?<![\w.]){re.escape(stub)}\s*\(", body):
        return ""
    at = re.search(rf"(?<![\w.]){re.escape(stub)}\s*[,)]", body)
    if at is None:
        return ""
    depth = 0
    for i in range(at.start() - 1, -1, -1):
        c = body[i]
        if c == ")":
            depth += 1
        elif c == "(":
            if depth == 0:
                m = re.search(r"([A-Za-z_]\w*)\s*$", body[:i])
                return m.group(1) if m else ""
            depth -= 1
    return ""


class YamlRow(NamedTuple):
    """What the resolver reads of a row it looks up in the yaml (check scans rows without
    schemas, and loads neither native_yaml's reader nor dataclasses: tests/check/test_cli.py)."""

    base: str
    overload: str
    func: str
    structured: bool
    structured_delegate: str | None
    dispatch: tuple[Dispatch, ...]
    python_module: str | None

    @property
    def name(self) -> str:
        return f"{self.base}.{self.overload}" if self.overload else self.base


_ENTRY_KEY = re.compile(r"^  (structured|structured_delegate|python_module): *([^\s#]+)", re.M)


def _yaml_row(entry: str) -> YamlRow | None:
    """The row of one yaml entry's text (from its ``- func:`` line to the next)."""
    rows = scan_rows(entry)
    if not rows:
        return None
    keys = dict(_ENTRY_KEY.findall(entry))
    func = entry[len("- func: ") : entry.find("\n") if "\n" in entry else len(entry)].strip()
    return YamlRow(
        rows[0].base, rows[0].overload, func, keys.get("structured") == "True", keys.get("structured_delegate"),
        rows[0].dispatch, keys.get("python_module"),
    )


_RESOLVER_KEY = "StubResolver"  # in PytorchTree.memo


class StubResolver:
    """Resolve rows to stubs over one tree (stubs and .cpp definitions read once)."""

    def __init__(
        self, stubs: dict[str, tuple[str, int]], cpp_files: list[tuple[str, str]], yaml: Callable[[], str] | None = None
    ):
        """``yaml``: gives the tree's native_functions.yaml, read when a row's kind or schema is
        needed and was not given, or a kernel forwards to another op (None: neither is read)."""
        self.stubs = stubs
        self._cpp = _CppIndex(cpp_files, stubs)
        self._memo: dict[tuple[str, str], StubResolution] = {}
        self._yaml = yaml
        self._yaml_cache: str | None = None
        self._rows_memo: dict[tuple[str, str], list[YamlRow]] = {}
        self._heads_cache: dict[str, list[int]] | None = None
        self._bases: dict[str, list[str]] = {}
        self._active: set[str] = set()  # rows being resolved through a forward (a cycle ends there)

    @classmethod
    def for_tree(cls, tree: PytorchTree, stubs: dict[str, tuple[str, int]] | None = None) -> StubResolver:
        yaml = (lambda: tree.read(NATIVE_FUNCTIONS).text) if tree.exists(NATIVE_FUNCTIONS) else None
        return cls(declared_stubs(tree) if stubs is None else stubs, native_cpp_files(tree.root), yaml)

    @classmethod
    def of(cls, tree: PytorchTree, build: Callable[[], StubResolver] | None = None) -> StubResolver:
        """The tree's resolver, built once per :class:`PytorchTree` (one plan reads the
        headers and .cpp sources once, however many of its steps resolve rows; no mpsgen
        command edits those files, so what it read stays true for the tree's lifetime).
        ``build``: how to make it when it is not made yet (check's index has the stubs and
        the .cpp list already), else :meth:`for_tree`."""
        got = tree.memo.get(_RESOLVER_KEY)
        if got is None:
            got = tree.memo[_RESOLVER_KEY] = (None, build() if build is not None else cls.for_tree(tree))
        return got[1]

    def meta_inputs(self, op: str) -> tuple[int, str] | None:
        """How many inputs the iterator of ``op``'s structured meta function has (``TORCH_META_FUNC(op)``
        in a .cpp of the tree) and where it is; None when no .cpp defines it or its body does
        not say plainly (a ``build_*_op`` helper, or ``add_input`` calls to count)."""
        return self._cpp.meta_inputs(op)

    def resolve(self, entry: NativeFunction, kernel: str | None = None) -> StubResolution:
        kernel = (kernel or host_kernel(entry) or "").rpartition("::")[2] or None
        op = row_op(entry)
        if kernel is None:
            return StubResolution(entry.name, op, None, None, None)
        key = (entry.name, kernel)
        memo = self._memo.get(key)
        if memo is not None:
            return memo
        result = self._resolve(entry, op, kernel)
        self._memo[key] = result
        return result

    def _resolve(self, entry: NativeFunction, op: str, kernel: str) -> StubResolution:
        definitions = self._cpp.find_all(kernel) if self._cpp.files else ()
        if definitions:
            definition, reason = self._definition_of(entry, kernel, definitions)
            if definition is None and reason:
                return StubResolution(entry.name, op, kernel, None, None, reason=reason)
            if definition is not None:
                return self._from_definition(entry, op, kernel, definition)
        cands = name_candidates(entry, kernel)
        for name, rule in cands:
            if name in self.stubs:
                return StubResolution(entry.name, op, kernel, name, rule, self.stubs[name], None, tuple(n for n, _ in cands))
        return StubResolution(entry.name, op, kernel, None, None, None, None, tuple(n for n, _ in cands))

    # -- which definition is the row's kernel ---------------------------------------------------
    def _definition_of(
        self, entry: NativeFunction, kernel: str, definitions: tuple[KernelDefinition, ...]
    ) -> tuple[KernelDefinition | None, str]:
        """The definition the row runs, by the row's kind: a structured row's kernel is its
        TORCH_IMPL_FUNC; a plain row's is the function of that name whose parameters are the
        row's schema arguments (upstream overloads ``k_out`` for rows of other dispatch keys).
        (None, why) when the tree's definitions say no one thing."""
        if len(definitions) == 1 and getattr(entry, "func", None) is None:
            # one definition of the name: the row's (a row read without its schema, as check
            # reads them, is not looked up; a second definition is what makes the kind matter)
            return definitions[0], ""
        structured, func = self._row_kind(entry)
        impl = [d for d in definitions if d.impl]
        plain = [d for d in definitions if not d.impl]
        if structured is None:  # a row read without its schema, and no yaml to look it up in
            return definitions[0], ""
        if structured and impl:
            return impl[0], ""
        if not structured and len(plain) == 1:
            return plain[0], ""
        if plain and func:
            wanted = _schema_kinds(func)
            fits = [d for d in plain if _cpp_kinds(d.params) == wanted]
            if len(fits) == 1:
                return fits[0], ""
            where = ", ".join(d.where for d in plain)
            shape = f"({', '.join(_KIND_WORDS[k] for k in wanted)})"
            if not fits:
                return None, (
                    f"{kernel}: none of its definitions ({where}) takes the arguments of row {entry.name} {shape}"
                    + (" and no TORCH_IMPL_FUNC defines it" if structured else "")
                )
            return None, f"{kernel}: several definitions take the arguments of row {entry.name} {shape}: {where}"
        if not structured and impl:
            return impl[0], ""
        return None, ""

    def _row_kind(self, entry: NativeFunction) -> tuple[bool | None, str | None]:
        """(structured, schema) of a row; read from the yaml when the row was scanned without
        them (check's rows hold names and dispatch lines only)."""
        func = getattr(entry, "func", None)
        if func is not None:
            return bool(getattr(entry, "structured", False)), func
        found = self._rows(entry.name)
        if not found:
            return None, None
        return found[0].structured, found[0].func

    def _rows(self, name: str = "", base: str = "") -> list[YamlRow]:
        """The yaml's row called ``name`` (``abs.out``), or every row of ``base``, each read from
        its own lines (the ``- func:`` headers are indexed once, by substring searches)."""
        key = (name, base)
        got = self._rows_memo.get(key)
        if got is None:
            text = self._yaml_text() if self._yaml is not None else ""
            heads = self._heads(text)
            starts = heads.get(name, ()) if name else [s for n in self._bases.get(base, ()) for s in heads[n]]
            got = self._rows_memo[key] = []
            for start in starts:
                end = text.find("\n- func:", start)
                row = _yaml_row(text[start : end + 1 if end >= 0 else len(text)])
                if row is not None:
                    got.append(row)
        return got

    def _heads(self, text: str) -> dict[str, list[int]]:
        """Row name -> offsets of its ``- func:`` lines (and ``self._bases``: base -> names)."""
        if self._heads_cache is None:
            heads: dict[str, list[int]] = {}
            bases: dict[str, list[str]] = {}
            starts = [0] if text.startswith("- func: ") else []
            at = text.find("\n- func: ")
            while at >= 0:
                starts.append(at + 1)
                at = text.find("\n- func: ", at + 1)
            for at in starts:
                line_end = text.find("\n", at)
                paren = text.find("(", at, line_end if line_end >= 0 else len(text))
                if paren < 0:
                    continue  # (a header torchgen would refuse: no row of it is read)
                name = text[at + 8 : paren]
                if name not in heads:
                    heads[name] = []
                    bases.setdefault(name.partition(".")[0], []).append(name)
                heads[name].append(at)
            self._heads_cache, self._bases = heads, bases
        return self._heads_cache

    def _yaml_text(self) -> str:
        if self._yaml_cache is None:
            self._yaml_cache = self._yaml()  # type: ignore[misc]
        return self._yaml_cache

    # -- what the definition runs ---------------------------------------------------------------
    def _from_definition(self, entry: NativeFunction, op: str, kernel: str, definition: KernelDefinition) -> StubResolution:
        called, how = definition.stubs, ""
        if called:
            passed = _passed_to(definition.body, called)
            if len(called) == 1 and passed:
                how = f"passes {called[0]} to {passed}"
        else:
            called, how = self._helper_stubs(definition)
        if not called:
            return self._forwarded(entry, op, kernel, definition)
        if len(called) == 1:
            stub = called[0]
            return StubResolution(
                entry.name, op, kernel, stub, RULE_DEFINITION, self.stubs.get(stub), definition, called,
                foreign=not _is_own_stub(stub, entry), how=how,
            )
        own = [s for s in called if _is_own_stub(s, entry)]
        if len(own) == 1:
            how = f"calls {own[0]}, the op's own of the stubs it {how and 'reaches' or 'calls'} ({', '.join(called)})"
            return StubResolution(
                entry.name, op, kernel, own[0], RULE_DEFINITION, self.stubs.get(own[0]), definition, called, how=how
            )
        return StubResolution(entry.name, op, kernel, None, None, None, definition, called, ambiguous=called)

    def _helper_stubs(self, definition: KernelDefinition, depth: int = 2) -> tuple[tuple[str, ...], str]:
        """The declared stubs named by the .cpp functions ``definition`` calls directly (not
        through the dispatcher: ``at::native::f(...)`` or ``f(...)``), two calls deep."""
        found: list[str] = []
        helpers: list[str] = []
        seen = {definition.name}
        frontier = [definition]
        for _ in range(depth):
            nxt = []
            for d in frontier:
                for m in _QUALIFIED_CALL.finditer(d.body):
                    qualifier, name = m.group(1), m.group(2)
                    if name in seen or name in self.stubs or name in _NOT_FUNCTIONS:
                        continue
                    if qualifier and qualifier.replace(" ", "") not in ("at::native::", "native::", "::"):
                        continue
                    seen.add(name)
                    for h in self._cpp.find_all(name):
                        if h.impl:
                            continue
                        if h.stubs:
                            found.extend(h.stubs)
                            helpers.append(f"{name} ({h.where})")
                        nxt.append(h)
            if found:
                break
            frontier = nxt
        called = tuple(dict.fromkeys(found))
        how = f"calls {', '.join(dict.fromkeys(helpers))}, which calls {', '.join(called)}" if called else ""
        return called, how

    def _forwarded(self, entry: NativeFunction, op: str, kernel: str, definition: KernelDefinition) -> StubResolution:
        """The stub of the op ``definition`` forwards to through the dispatcher
        (``return at::x_out(result, self, other);``): the rows of ``x`` its arguments fit are
        resolved in turn, and must agree."""
        none = StubResolution(entry.name, op, kernel, None, None, None, definition, ())
        if self._yaml is None:
            return none
        targets: dict[str, NativeFunction] = {}
        calls = []
        for m in _DISPATCHER_CALL.finditer(definition.body):
            close = close_bracket(definition.body, m.end() - 1)
            if close < 0:
                continue
            args = split_args(definition.body[m.end() : close])
            calls.append(m.group(1))
            for row in self._forward_rows(m.group(1), args, definition):
                if row.name != entry.name:
                    targets.setdefault(row.name, row)
        if not targets:
            return none
        # a row without a CPU/CUDA kernel of its own (at::empty_like, a composite) runs no stub itself
        runs = {n: row for n, row in targets.items() if host_kernel(row) is not None or row.structured_delegate}
        if not runs:
            return none._replace(
                reason=f"{kernel} ({definition.where}) calls no declared dispatch stub and forwards only to rows without "
                f"a CPU/CUDA kernel ({', '.join(targets)})"
            )
        targets = runs
        if entry.name in self._active:
            return none
        self._active.add(entry.name)
        try:
            results = [(row, self._resolve_forward_target(row)) for row in targets.values()]
        finally:
            self._active.discard(entry.name)
        at = f"{kernel} ({definition.where}) forwards to at::{'/'.join(dict.fromkeys(calls))}"
        blind = [row.name for row, r in results if r is None or r.stub is None and not r.ambiguous]
        if blind:
            return none._replace(reason=f"{at}, whose row {', '.join(blind)} runs no stub mpsgen can read")
        stubs = tuple(dict.fromkeys(s for _row, r in results for s in ((r.stub,) if r.stub else r.ambiguous)))
        if len(stubs) != 1:
            return none._replace(
                candidates=stubs, ambiguous=stubs,
                reason=f"{at}; the rows it may reach ({', '.join(targets)}) run several stubs: {', '.join(stubs)}",
            )
        stub = stubs[0]
        reached = results[0][1]
        chain = f"forwards to {', '.join(targets)} (at::{'/'.join(dict.fromkeys(calls))}), whose kernel {reached.how or 'calls ' + stub}"
        if reached.definition is not None and not reached.how:
            chain = (
                f"forwards to {', '.join(targets)} (at::{'/'.join(dict.fromkeys(calls))}), whose kernel "
                f"{reached.kernel} ({reached.definition.where}) calls {stub}"
            )
        return StubResolution(
            entry.name, op, kernel, stub, RULE_DEFINITION, self.stubs.get(stub), definition, stubs,
            foreign=not _is_own_stub(stub, entry), how=chain,
        )

    def _resolve_forward_target(self, row: NativeFunction) -> StubResolution | None:
        """What a row reached through the dispatcher runs: its CPU/CUDA kernel's stub, or its
        structured delegate's (``clamp_min`` -> ``clamp_min.out``)."""
        if host_kernel(row) is not None:
            return self.resolve(row)
        if row.structured_delegate:
            delegate = self._rows(row.structured_delegate)
            if delegate and host_kernel(delegate[0]) is not None:
                return self.resolve(delegate[0])
        return None

    def _forward_rows(self, name: str, args: list[str], definition: KernelDefinition) -> list[NativeFunction]:
        """The rows ``at::<name>(args)`` may run: ``x_out``/``x_outf`` are x's out= rows (the
        out tensors first, or last), any other name its functional or in-place rows; kept when
        the number of arguments and the kinds the caller's parameters and literals show fit."""
        outf = name.endswith("_outf")
        out = outf or name.endswith("_out")
        base = name[: -len("_outf")] if outf else name[: -len("_out")] if out else name
        params = _param_kinds(definition.params)
        fits = []
        for row in self._rows(base=base):
            if row.base != base:
                continue
            schema = _schema_args(row.func)
            n_out = sum(1 for _k, is_out, _d in schema if is_out)
            if bool(n_out) != out or len(args) < n_out:
                continue
            inputs = [(k, d) for k, is_out, d in schema if not is_out]
            given = args[: len(args) - n_out] if outf else args[n_out:]
            if not sum(1 for _k, d in inputs if not d) <= len(given) <= len(inputs):
                continue
            if all(_fits(_arg_kind(a, params), k) for a, (k, _d) in zip(given, inputs)):
                fits.append(row)
        return fits

    def near(self, op: str, most: int = 5) -> list[str]:
        """Declared stubs whose names share a word with ``op`` (for refusals)."""
        words = [w for w in op.split("_") if len(w) > 2]
        hits = [s for s in self.stubs if any(w in s for w in words)]
        return sorted(hits, key=lambda s: (len(s), s))[:most]


def native_cpp_files(root: os.PathLike | str) -> list[tuple[str, str]]:
    """(rel, path) of the CPU-side .cpp sources under aten/src/ATen/native (backend folders skipped)."""
    base = os.path.join(str(root), NATIVE_DIR)
    out: list[tuple[str, str]] = []
    if not os.path.isdir(base):
        return out
    out.extend((rel, e.path) for rel, e in walk_files(base, NATIVE_DIR, (".cpp",), skip=_SKIP_DIRS))
    return out
