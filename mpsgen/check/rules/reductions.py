"""The reduction family's rule of ``mpsgen check`` (MPS019): the MPS registration of a
reduction stub (``REGISTER_DISPATCH(prod_stub, ...)``, a stub declared in ``ReduceOps.h`` or
``ReduceAllOps.h``) against the Metal kernels its host function asks the shader library for.

The host function is followed as the tree writes it: the pipeline names it asks for itself
(``fmt::format("prod_reduction_general_{}_{}", ...)``), and those of the file's static kernel
functions and lambdas it calls, with a kernel prefix handed down as an argument bound to the
literal the caller passes (upstream's ``sum_kernel_mps`` -> ``sum_nansum_kernel_mps(iter,
"sum_")`` -> ``reduction_dispatch_mps(iter, ReductionDispatch{.prefix = kernel_prefix, ...})``
-> ``fmt::format("{}reduction_{}_{}", opts.prefix, ...)``). The names are read by
:mod:`mpsgen.tree.pipelines` (both sides: the requests with the expression filling each hole,
the registrations through macros that call macros); what this module adds is finding the
file's static functions and lambdas, and binding a name's leading hole to the literals that
reach it. What cannot be bound (a prefix computed at run time) is left to MPS017, never guessed.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterator
from functools import partial
from typing import NamedTuple

from mpsgen.check.model import ERROR, Finding, rule
from mpsgen.tree.pipeline_sides import pipeline_sides
from mpsgen.tree.facts import Facts
from mpsgen.tree.index import Index
from mpsgen.tree.pipelines import pipeline_requests
from mpsgen.tree.source import (
    close_bracket,
    line_starts,
    mask_c_comments_and_strings,
    split_args,
)
from mpsgen.tree.stubs import REDUCTION_STUB_HEADERS

MAX_DEPTH = 6  # calls followed from the registered function (upstream's chain is three deep)
_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_LAMBDA = re.compile(r"\bauto\s*&?\s*(\w+)\s*=\s*\[[^\]]*\]\s*\(")
_FIELD = re.compile(r"(\w+)\s*(?:\.|->)\s*(\w+)")
_DESIGNATED = re.compile(r"\.\s*(\w+)\s*=\s*(.*)", re.S)
_CALL = re.compile(r"(?<![\w.>:])(\w+)\s*\(")
_ASSIGNED = re.compile(r"(?<![\w.>])(\w+)\s*(?<![=!<>+\-*/])=(?!=)")
# a static function's definition at the start of a line: its name is the word before the "("
_STATIC_FN = re.compile(r"^static[ \t]+(?:inline[ \t]+)?[\w:<>,& \t*]*?\b(\w+)[ \t]*\(", re.M)


class _Callable(NamedTuple):
    """A function or lambda of a host file: its parameters' names and its body's offsets."""

    name: str
    params: tuple[str, ...]
    start: int  # the body's "{"
    end: int  # its "}"


class _Context(NamedTuple):
    """What the names of one call of a callable hold: each parameter's possible literals (None:
    not known), a struct parameter's fields', and the caller's context for captured names."""

    fn: _Callable
    params: dict
    fields: dict
    parent: _Context | None

    @property
    def key(self) -> tuple:
        """What the requests it reaches depend on (its callable, its bindings, its parent's)."""
        return (
            self.fn.start, repr(sorted(self.params.items(), key=str)), repr(sorted(self.fields.items(), key=str)),
            self.parent.key if self.parent is not None else None,
        )


class _HostText:
    """A host file's text, masked text, functions and pipeline requests, read once per run."""

    def __init__(self, path: str, text: str):
        self.path = path
        self.text = text
        self.masked = mask_c_comments_and_strings(text)
        self.starts = line_starts(text)
        self.requests = pipeline_requests(path, text)
        self.functions: dict[str, _Callable] = {}
        self._calls: list[tuple[int, str]] | None = None  # (offset, name) of each `name(` (read once)
        self._call_offsets: list[int] = []
        self._args: dict[int, list[tuple[str, int]] | None] = {}
        self._assigned: dict[int, dict[str, list[tuple[int, int]]]] = {}  # by body: name -> (offset, value offset)
        self._lambdas: dict[int, list[_Callable]] = {}
        self.reached: dict[tuple, list[_Reached]] = {}  # by _Context.key
        # its static functions (kernel functions `static void NAME(TensorIterator& ...)` among them)
        for m in _STATIC_FN.finditer(self.masked):
            if m.group(1) not in self.functions and (fn := self._callable_at(m.group(1), m.end() - 1)) is not None:
                self.functions[m.group(1)] = fn

    def _callable_at(self, name: str, open_paren: int) -> _Callable | None:
        close = close_bracket(self.masked, open_paren)
        if close < 0:
            return None
        brace = self.masked.find("{", close)
        semi = self.masked.find(";", close)
        if brace < 0 or 0 <= semi < brace:
            return None
        end = close_bracket(self.masked, brace)
        if end < 0:
            return None
        params = []
        for p in split_args(self.masked[open_paren + 1 : close]):
            words = re.findall(r"\w+", p.split("=", 1)[0])
            params.append(words[-1] if words else "")
        return _Callable(name, tuple(params), brace, end)

    def lambdas(self, fn: _Callable) -> list[_Callable]:
        """``auto name = [&](params) { ... };`` in ``fn``'s body."""
        found = self._lambdas.get(fn.start)
        if found is None:
            found = self._lambdas[fn.start] = []
            for m in _LAMBDA.finditer(self.masked, fn.start, fn.end):
                lam = self._callable_at(m.group(1), m.end() - 1)
                if lam is not None:
                    found.append(lam)
        return found

    def calls(self, names: dict[str, _Callable], start: int, end: int) -> Iterator[tuple[_Callable, int, list[tuple[str, int]]]]:
        """Each call of one of ``names`` between the offsets: the callable, the call's offset, and
        each argument's text and offset."""
        if self._calls is None:
            self._calls = [(m.start(), m.group(1)) for m in _CALL.finditer(self.masked)]
            self._call_offsets = [at for at, _name in self._calls]
        lo, hi = bisect_left(self._call_offsets, start), bisect_left(self._call_offsets, end)
        for at, name in self._calls[lo:hi]:
            callee = names.get(name)
            if callee is None:
                continue
            if at not in self._args:
                self._args[at] = self._read_args(at)
            if self._args[at] is not None:
                yield callee, at, self._args[at]

    def _read_args(self, at: int) -> list[tuple[str, int]] | None:
        open_paren = self.masked.index("(", at)
        close = close_bracket(self.masked, open_paren)
        if close < 0:
            return None
        args, pos = [], open_paren + 1
        for piece in split_args(self.masked[open_paren + 1 : close]):
            found = self.masked.find(piece, pos, close) if piece else pos
            found = pos if found < 0 else found
            args.append((self.text[found : found + len(piece)], found))
            pos = found + len(piece)
        return args

    def assignments(self, fn: _Callable, name: str) -> list[tuple[int, int]]:
        """(offset, offset of the value) of each ``name = value`` in ``fn``'s body."""
        table = self._assigned.get(fn.start)
        if table is None:
            table = self._assigned[fn.start] = {}
            for m in _ASSIGNED.finditer(self.masked, fn.start, fn.end):
                table.setdefault(m.group(1), []).append((m.start(1), m.end()))
        return table.get(name, [])

    def offset(self, line: int) -> int:
        return self.starts[line - 1]


def _ternary(expr: str) -> tuple[str, str] | None:
    """``c ? a : b`` -> (a, b) at the top level of ``expr`` (strings masked)."""
    if "?" not in expr:
        return None
    masked = mask_c_comments_and_strings(expr)
    depth, q = 0, -1
    for i, c in enumerate(masked):
        depth += c in "([{"
        depth -= c in ")]}"
        if depth == 0 and c == "?" and q < 0:
            q = i
        elif depth == 0 and c == ":" and q >= 0 and masked[i - 1 : i + 1] != "::" and masked[i : i + 2] != "::":
            return expr[q + 1 : i], expr[i + 1 :]
    return None


def _values(host: _HostText, expr: str, at: int, ctx: _Context, depth: int = 0) -> frozenset[str] | None:
    """The string literals ``expr`` may hold at offset ``at`` in ``ctx`` (None: not known)."""
    expr = expr.strip()
    if depth > 8 or not expr:
        return None
    m = _STRING.fullmatch(expr)
    if m:
        return frozenset({m.group(1)})
    wrapped = re.fullmatch(r"(?:std::)?string\s*\((.*)\)|\((.*)\)", expr, re.S)
    if wrapped:
        return _values(host, wrapped.group(1) or wrapped.group(2) or "", at, ctx, depth + 1)
    branches = _ternary(expr)
    if branches:
        a, b = (_values(host, e, at, ctx, depth + 1) for e in branches)
        return a | b if a is not None and b is not None else None
    m = _FIELD.fullmatch(expr)
    if m:
        for c in _chain(ctx):
            if m.group(1) in c.fields:
                return c.fields[m.group(1)].get(m.group(2))
        return None
    if not re.fullmatch(r"\w+", expr):
        return None
    for c in _chain(ctx):
        if expr in c.params:
            return c.params[expr]
        # a local: every value assigned to it in this body before `at`
        found, union = False, set()
        for where, value in host.assignments(c.fn, expr):
            if where >= at:
                break
            semi = host.masked.find(";", value)
            if semi < 0:
                return None
            got = _values(host, host.text[value:semi], where, c, depth + 1)
            if got is None:
                return None
            found = True
            union |= got
        if found:
            return frozenset(union)
    return None


def _chain(ctx: _Context | None) -> Iterator[_Context]:
    while ctx is not None:
        yield ctx
        ctx = ctx.parent


def _bind(host: _HostText, callee: _Callable, args: list[tuple[str, int]], caller: _Context, at: int, parent: _Context | None) -> _Context:
    """The context of ``callee`` called with ``args`` from ``caller`` (a lambda's parent is the
    body it is defined in)."""
    params: dict = {}
    fields: dict = {}
    for i, name in enumerate(callee.params):
        if i >= len(args) or not name:
            params[name] = None
            continue
        expr, where = args[i]
        init = re.fullmatch(r"\s*(?:[\w:]+\s*)?\{(.*)\}\s*", expr, re.S)
        if init and re.match(r"\s*\.\s*\w+\s*=", init.group(1)):  # a struct's designated initializer
            bound = {}
            for piece in split_args(init.group(1)):
                d = _DESIGNATED.fullmatch(piece.strip())
                if d:
                    bound[d.group(1)] = _values(host, d.group(2), at, caller)
            fields[name] = bound
            continue
        plain = expr.strip()
        passed = next((c.fields[plain] for c in _chain(caller) if plain in c.fields), None)
        if passed is not None:
            fields[name] = passed
        else:
            params[name] = _values(host, expr, where, caller)
    return _Context(callee, params, fields, parent)


class _Reached(NamedTuple):
    request: object  # a mpsgen.tree.pipelines.PipelineRequest
    heads: frozenset[str] | None  # the literals its leading hole may hold (None: not bound)
    via: tuple[str, ...]  # the callables it is reached through, from the one asked about


def _reached(host: _HostText, ctx: _Context, scope: list[_Callable], stack: set, depth: int = 0) -> list[_Reached]:
    """The pipeline requests ``ctx.fn`` makes, itself and through the lambdas of ``scope`` (those
    of the function that defines them) and the kernel functions of the file it calls. A call
    inside a lambda's body is that lambda's, bound with its parameters. Worked out once per
    callable and bindings (registrations share their helpers)."""
    fn = ctx.fn
    key = ctx.key
    if key in host.reached:
        return host.reached[key]
    if key in stack or depth > MAX_DEPTH:
        return []
    stack.add(key)
    inner = [(lam.start, lam.end) for lam in scope if lam.start != fn.start and fn.start < lam.start < fn.end]

    def own(at: int) -> bool:
        return fn.start <= at <= fn.end and not any(s <= at <= e for s, e in inner)

    out = []
    for r in host.requests or ():
        at = host.offset(r.line)
        if own(at):
            heads = None
            if r.parts and r.parts[0] is None and r.holes and r.holes[0]:
                heads = _values(host, r.holes[0], at, ctx)
            out.append(_Reached(r, heads, (fn.name,)))
    lambdas = {lam.name: lam for lam in scope if lam.start != fn.start}
    for lam, at, args in host.calls(lambdas, fn.start, fn.end):
        if own(at):
            found = _reached(host, _bind(host, lam, args, ctx, at, ctx), scope, stack, depth + 1)
            out += [r._replace(via=(fn.name,) + r.via) for r in found]
    for g, at, args in host.calls(host.functions, fn.start, fn.end):
        if g.start != fn.start and own(at):
            found = _reached(host, _bind(host, g, args, ctx, at, None), host.lambdas(g), stack, depth + 1)
            out += [r._replace(via=(fn.name,) + r.via) for r in found]
    stack.discard(key)
    host.reached[key] = out
    return out


def _fill(parts: tuple[str | None, ...], hole: int, value: str) -> tuple[str | None, ...]:
    """``parts`` with its ``hole``-th hole replaced by ``value`` (neighbouring literals joined)."""
    at = [i for i, p in enumerate(parts) if p is None][hole]
    out: list[str | None] = []
    for p in parts[:at] + (value,) + parts[at + 1 :]:
        if p is not None and out and out[-1] is not None:
            out[-1] += p
        else:
            out.append(p)
    return tuple(out)


def _shown(parts: tuple[str | None, ...]) -> str:
    return "".join(p if p is not None else "{}" for p in parts)


def _hosts(f: Facts) -> dict[str, _HostText]:
    return f.table("reduction_hosts", lambda _index: {})  # (filled on demand by _host)


def _host(f: Facts, path: str) -> _HostText | None:
    cache = _hosts(f)
    if path not in cache:
        text = next((h.text for h in f.index.host_files if h.path == path), None)
        cache[path] = _HostText(path, text) if text is not None else None
    return cache[path]


def _pasted_words(index: Index) -> set[str]:
    words = set()
    for _path, text in index.mps_texts():
        if "##" in text:
            for m in re.finditer(r"(\w+)\s*##\s*(\w+)?|##\s*(\w+)", text):
                words |= {w for w in m.groups() if w}
    return words


def _pasted(f: Facts) -> set[str]:
    """The words pasted with ``##`` in the #defines of MPS sources: a function such a macro
    makes is named by no identifier of the text."""
    return f.table("pasted_words", _pasted_words)


def _undefined(f: Facts, name: str, stub: str) -> bool:
    """Whether the function ``name`` is certainly defined nowhere: the identifier is written in
    MPS code only on the REGISTER_DISPATCH lines naming it, and no macro pastes such a name."""
    registering = {(d.path, d.line) for regs in f.dispatches.values() for d in regs if d.function.rpartition("::")[2] == name}
    if any(site not in registering for site in f.index.code_sites(name)):
        return False
    for w in _pasted(f):  # `NAME##_kernel_mps` instantiated with `std_var` makes std_var_kernel_mps
        rest = name[: -len(w)] if name.endswith(w) else name[len(w) :] if name.startswith(w) else ""
        if len(w) >= 3 and rest.strip("_") and f.index.code_sites(rest.strip("_")):
            return False
    return True


def _reduction_stubs(f: Facts) -> set[str]:
    return {s for s, (path, _line) in f.index.stubs.items() if path.rpartition("/")[2] in REDUCTION_STUB_HEADERS}


def _sites(f: Facts, stub: str, at: tuple[tuple[str, int], ...]) -> list[tuple[str, int]]:
    return list(at) + f.stub_sites(stub)


@rule(
    "MPS019",
    "reduction-without-kernel",
    ERROR,
    "a reduction stub's MPS registration runs a host function that is not defined, or that asks for Metal kernels no .metal file registers",
    """
A reduction stub (`prod_stub`, `std_var_stub`, `sum_stub`: declared in ReduceOps.h or
ReduceAllOps.h) is registered for MPS with `REGISTER_DISPATCH(prod_stub, &mps::prod_mps_kernel)`.
The registered function must exist (or the build fails), and the kernels it asks the shader
library for must be registered by a kernels/*.metal file with `[[host_name(...)]]`, for every
dtype its dtype check accepts: otherwise the op compiles, links, and fails at run time on a Mac
("Failed to create pipeline state"), for every tensor or only for some shapes (a reduction host
picks among inner, outer and general kernels by shape).

The host function is followed through the static kernel functions and lambdas of its file it
calls, with a kernel prefix passed down as an argument bound to the literal its caller gives:
upstream's `sum_kernel_mps` calls `sum_nansum_kernel_mps(iter, "sum_")`, which hands
`ReductionDispatch{.prefix = kernel_prefix}` to `reduction_dispatch_mps`, whose
`fmt::format("{}reduction_inner_{}_{}", opts.prefix, ...)` must then find a registered
`sum_reduction_inner_<TI>_<TO>`. Every literal that may reach the prefix is checked. A name
whose prefix is computed at run time is MPS017's business; a registration made by a macro of
the file is not checked for the function's existence.

Where the name the host writes starts with a literal (`"prod_reduction_general_{}_{}"`), MPS017
reports the same missing kernel at the request; this rule reports it at the registration,
naming the stub whose ops fail, and also where the prefix is an argument MPS017 cannot read.

Fix: register the kernel (for the prefix and dtype named) in the .metal file, correct the name
the host asks for, or register the function that exists.
""",
)
def reduction_without_kernel(f: Facts) -> Iterator[Finding]:
    stubs = _reduction_stubs(f)
    if not stubs:
        return
    sides = None
    registered: dict[tuple, bool] = {}
    for stub in sorted(stubs & set(f.dispatches)):
        for d in f.dispatches[stub]:
            name = d.function.rpartition("::")[2]
            shown_call = f"REGISTER_DISPATCH({stub}, {'&' if d.via is None else ''}{d.function})"
            host = _host(f, d.path) if d.path.endswith(".mm") else None
            plain = re.fullmatch(r"[\w:]+", d.function) is not None  # (not a lambda or an expression)
            if d.via is None and plain and (host is None or name not in host.functions) and _undefined(f, name, stub):
                yield Finding(
                    d.path, d.line, 0, "MPS019", ERROR,
                    f"{shown_call} registers {name}, which no file under aten/src/ATen/native/mps defines: the build fails",
                    symbols=(stub, name),
                    locate=partial(_sites, f, stub, ()),
                )
                continue
            fn = host.functions.get(name) if host is not None and host.requests else None
            if fn is None:
                continue  # defined elsewhere, by a macro, or asking for no pipeline by name
            if sides is None:
                sides = pipeline_sides(f)
            start = _Context(fn, {p: None for p in fn.params}, {}, None)
            said = set()
            for reached in dict.fromkeys(_reached(host, start, host.lambdas(fn), set())):
                r = reached.request
                if r.parts == (None,):
                    continue
                if r.parts[0] is None:
                    if not reached.heads:
                        continue  # a prefix computed at run time: MPS017's
                    named = [(_fill(r.parts, 0, h), h) for h in sorted(reached.heads)]
                else:
                    named = [(r.parts, None)]
                for parts, head in named:
                    dtype_hole = r.dtype_hole - (1 if head is not None else 0)
                    wanted = [(parts, None)]
                    if r.dtype_hole >= 0 and dtype_hole >= 0 and r.dtypes:
                        wanted += [(_fill(parts, dtype_hole, dt), dt) for dt in r.dtypes]
                    for want, dtype in wanted:
                        if want not in registered:
                            registered[want] = sides.registered(want)
                        if registered[want]:
                            continue
                        missing_bare = dtype is None
                        shown = _shown(want)
                        if shown in said:
                            if missing_bare:
                                break
                            continue
                        said.add(shown)
                        where = f"{r.path.rpartition('/')[2]}:{r.line}"
                        through = f", through {' -> '.join(reached.via[1:])}" if len(reached.via) > 1 else ""
                        because = f" (its dtype check accepts {dtype})" if dtype else ""
                        prefix = f" with the prefix \"{head}\"" if head is not None else ""
                        yield Finding(
                            d.path, d.line, 0, "MPS019", ERROR,
                            f"{shown_call}: {name} asks the shader library for `{shown}`{prefix} ({where}{through}){because}, "
                            f"which no kernels/*.metal registers with [[host_name(...)]]: {stub}'s ops fail on MPS at run time",
                            symbols=(stub, name, shown),
                            locate=partial(_sites, f, stub, ((r.path, r.line),)),
                        )
                        if missing_bare:
                            break  # the name itself is missing: so is each of its dtypes
