"""mpsgen.lazyre: a pattern compiled at its first use, then the compiled pattern's own."""

from __future__ import annotations

import re

from mpsgen.lazyre import LazyPattern, lazy


def test_a_lazy_pattern_is_compiled_once_at_first_use(monkeypatch):
    compiled = []
    real = re.compile
    monkeypatch.setattr(re, "compile", lambda *a: compiled.append(a) or real(*a))
    p = lazy(r"(\w+)_functor", re.M)
    assert isinstance(p, LazyPattern) and compiled == []
    assert [m.group(1) for m in p.finditer("abs_functor x sin_functor")] == ["abs", "sin"]
    assert p.pattern == r"(\w+)_functor" and p.flags & re.M and p.sub("f", "a_functor") == "f"
    assert compiled == [(r"(\w+)_functor", re.M)]
    assert lazy(rb"\d+").findall(b"a1b22") == [b"1", b"22"]
