"""What a native_functions row runs: row -> its CPU/CUDA kernel -> the C++ function that
defines it -> the dispatch stub that function calls -> the stub's ``DECLARE_DISPATCH``.

This is the one resolver of row -> stub; ``new-op``, ``migrate-from-mpsgraph`` and ``check``
all ask it. Where the tree has the ``.cpp`` files (a real checkout), the stub is read from the
kernel's definition: ``TORCH_IMPL_FUNC(<kernel>)``, a macro instance that expands to one
(``CREATE_UNARY_TORCH_IMPL_FUNC(acos_out, acos_stub)``), or a plain function
``Tensor& <kernel>(...) { ... }``. Where they are absent (the wheel ships headers only),
the declared stubs are matched by name, and the result says which rule chose the stub.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, NamedTuple

from mpsgen.tree import NATIVE_DIR, PytorchTree
from mpsgen.tree.source import close_bracket
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
_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_SKIP_DIRS = frozenset({"cpu", "mps", "cuda", "hip", "miopen", "cudnn", "mkldnn", "vulkan", "metal", "quantized", "sparse", "nested"})
class KernelDefinition(NamedTuple):
    """Where a CPU/CUDA kernel is defined and the declared stubs its body calls."""

    name: str
    path: str
    line: int  # 1-based
    stubs: tuple[str, ...]
    via: str | None = None  # the macro whose instance defines it
    # the body returns before its stub call for integral and bool inputs (nan_to_num_out copies
    # them): the stub, and the kernel registered for it, only ever see floating types
    copies_integral: bool = False

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


_INTEGRAL_EARLY_RETURN = re.compile(
    r"\bif\s*\(\s*(?:c10::|at::)?isIntegralType\s*\([^;{}]*?\btrue\b[^;{}]*?\)\s*\)\s*\{[^{}]*\breturn\b[^{}]*\}"
)


def _copies_integral(body: str, stubs: tuple[str, ...]) -> bool:
    """Whether ``body`` returns for integral and bool inputs (``isIntegralType(t, true)``)
    before it calls any of its ``stubs``."""
    m = _INTEGRAL_EARLY_RETURN.search(_LINE_COMMENT.sub("", body))
    if m is None or not stubs:
        return False
    calls = [c.start() for s in stubs for c in re.finditer(rf"\b{re.escape(s)}\s*\(", _LINE_COMMENT.sub("", body))]
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

    @property
    def verified(self) -> bool:
        return self.rule == RULE_DEFINITION

    def describe(self) -> str:
        """One line for notes and refusals."""
        if self.kernel is None:
            return f"{self.row} has no CPU/CUDA kernel"
        if self.stub is None:
            if self.ambiguous:
                return (
                    f"{self.kernel} ({self.definition.where}) calls several stubs: {', '.join(self.ambiguous)}"  # type: ignore[union-attr]
                )
            if self.definition is not None:
                return f"{self.kernel} ({self.definition.where}) calls no declared dispatch stub"
            return f"no declared stub matches {self.kernel} (tried {', '.join(self.candidates)})"
        decl = f"{self.declared_at[0]}:{self.declared_at[1]}" if self.declared_at else "not declared"
        if self.definition is not None:
            via = f" via {self.definition.via}" if self.definition.via else ""
            how = f"{self.kernel} ({self.definition.where}{via}) calls {self.stub}"
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
# first "}" in column 0.
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
    import mmap
    import stat

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
        self._found: dict[str, KernelDefinition | None] = {}

    def _stubs_called(self, body: str) -> tuple[str, ...]:
        body = _LINE_COMMENT.sub("", body)
        return tuple(dict.fromkeys(n for n in _CALL.findall(body) if n in self.stubs))

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
                        made[name] = KernelDefinition(name, rel, text.count("\n", 0, start) + 1, self._stubs_called(body), via)
        return made

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
            from mpsgen.tree.source import mask_c_comments_and_strings, match_close

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
        try:
            return self._found[kernel]
        except KeyError:
            pass
        found = None
        if kernel not in _NOT_FUNCTIONS:
            self._index()
            starts = self._starts.get(kernel, ())
            macro_files = [i for i in self._macro_files if kernel in self._made_by_macros(i)]
            for i in sorted({i for i, _ in starts} | set(macro_files)):
                text = self._text(i)
                for _, at in [s for s in self._starts.get(kernel, ()) if s[0] == i]:
                    m = _TOP_DEFINITION.match(text, at)
                    if m is not None and (m.group(1) or m.group(2)) == kernel:
                        body = m.group(3)
                        stubs = self._stubs_called(body)
                        found = KernelDefinition(
                            kernel, self.files[i][0], text.count("\n", 0, at) + 1, stubs, None, _copies_integral(body, stubs)
                        )
                        break
                if found is None and i in macro_files:
                    found = self._made_by_macros(i)[kernel]
                if found is not None:
                    break
        self._found[kernel] = found
        return found


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


_RESOLVER_KEY = "StubResolver"  # in PytorchTree.memo


class StubResolver:
    """Resolve rows to stubs over one tree (stubs and .cpp definitions read once)."""

    def __init__(self, stubs: dict[str, tuple[str, int]], cpp_files: list[tuple[str, str]]):
        self.stubs = stubs
        self._cpp = _CppIndex(cpp_files, stubs)
        self._memo: dict[tuple[str, str], StubResolution] = {}

    @classmethod
    def for_tree(cls, tree: PytorchTree, stubs: dict[str, tuple[str, int]] | None = None) -> StubResolver:
        return cls(declared_stubs(tree) if stubs is None else stubs, native_cpp_files(tree.root))

    @classmethod
    def of(cls, tree: PytorchTree) -> StubResolver:
        """The tree's resolver, built once per :class:`PytorchTree` (one plan reads the
        headers and .cpp sources once, however many of its steps resolve rows; no mpsgen
        command edits those files, so what it read stays true for the tree's lifetime)."""
        got = tree.memo.get(_RESOLVER_KEY)
        if got is None:
            got = tree.memo[_RESOLVER_KEY] = (None, cls.for_tree(tree))
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
        definition = self._cpp.find(kernel) if self._cpp.files else None
        if definition is not None:
            called = definition.stubs
            if len(called) == 1:
                stub = called[0]
                return StubResolution(
                    entry.name, op, kernel, stub, RULE_DEFINITION, self.stubs.get(stub), definition, called,
                    foreign=not _is_own_stub(stub, entry),
                )
            own = [s for s in called if _is_own_stub(s, entry)]
            if len(own) == 1:
                return StubResolution(
                    entry.name, op, kernel, own[0], RULE_DEFINITION, self.stubs.get(own[0]), definition, called
                )
            return StubResolution(
                entry.name, op, kernel, None, None, None, definition, called, ambiguous=called if called else ()
            )
        cands = name_candidates(entry, kernel)
        for name, rule in cands:
            if name in self.stubs:
                return StubResolution(entry.name, op, kernel, name, rule, self.stubs[name], None, tuple(n for n, _ in cands))
        return StubResolution(entry.name, op, kernel, None, None, None, None, tuple(n for n, _ in cands))

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
