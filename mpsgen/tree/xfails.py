"""The xfail/skip entries of ``common_mps.py`` as data: which op, which dict, which dtypes."""

from __future__ import annotations

from dataclasses import dataclass

# torch dtype spellings -> canonical names
_ALIASES = {
    "float": "float32",
    "half": "float16",
    "double": "float64",
    "int": "int32",
    "long": "int64",
    "short": "int16",
    "cfloat": "complex64",
    "chalf": "complex32",
    "cdouble": "complex128",
}


def canonical_dtype(expr: str) -> str:
    name = expr.strip().split(".")[-1]
    return "torch." + _ALIASES.get(name, name)


@dataclass(frozen=True)
class XfailEntry:
    """One ``"key": None | [dtypes]`` element of an xfail/skip dict."""

    dict_name: str
    key: str
    dtypes: tuple[str, ...] | None  # None means every dtype
    line: int  # 1-based line of the key
