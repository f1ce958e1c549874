"""Facts of Metal's C++ dialect, shared by every layer above: its scalar types and the torch dtypes
they stand for, how closely a result computed in each floating type must match torch's, and what
the dialect lacks (the compile gate and the kernel-spec checks)."""

from __future__ import annotations

import re

# the torch dtype (its name in ``torch``) each Metal scalar type of MPS kernels stands for
TORCH_NAMES = {
    "float": "float32", "half": "float16", "bfloat": "bfloat16", "long": "int64", "int": "int32",
    "short": "int16", "char": "int8", "uchar": "uint8", "bool": "bool",
    "float2": "complex64", "half2": "complex32",
}
# the c10 ScalarType constant of each Metal scalar type (as host code names it: `kFloat`)
SCALAR_TYPES = {
    "float": "kFloat", "half": "kHalf", "bfloat": "kBFloat16", "long": "kLong", "int": "kInt", "short": "kShort",
    "char": "kChar", "uchar": "kByte", "bool": "kBool", "float2": "kComplexFloat", "half2": "kComplexHalf",
}
# (rtol, atol) a result of each floating dtype is compared with torch's CPU op under (try)
TOLERANCES = {"float32": (1.3e-6, 1e-5), "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5)}

# What Metal's C++ dialect does not have, found as whole words in the functor's code (comments
# and strings blanked): (pattern, why).
NOT_METAL = [
    (re.compile(r"\bdouble\b"), "Metal has no double (nor long double); compute in float (opmath_t<T> for half and bfloat)"),
    (re.compile(r"\bstd\s*::"), "Metal has no C++ standard library (std::); use the metal:: and c10::metal:: functions"),
    (re.compile(r"\b(?:printf|fprintf|sprintf|snprintf|puts|putchar)\s*\("), "a Metal kernel cannot print"),
    (re.compile(r"\b(?:malloc|calloc|realloc|free)\s*\("), "a Metal kernel cannot allocate memory"),
    (re.compile(r"\b(?:throw|try|catch)\b"), "Metal has no exceptions"),
    (re.compile(r"\b(?:new|delete)\b"), "Metal has no new or delete (no dynamic memory)"),
    (re.compile(r"\bgoto\b"), "Metal has no goto"),
    (re.compile(r"\b(?:dynamic_cast|typeid)\b"), "Metal has no run-time type information (dynamic_cast, typeid)"),
    (re.compile(r"\bvirtual\b"), "Metal has no virtual functions"),
    (re.compile(r"\b(?:thread_local|register)\b"), "Metal has no thread_local or register storage"),
    (re.compile(r"\(\s*\*\s*(?!this\b)(?:[A-Za-z_]\w*)?\s*\)\s*\("), "Metal has no function pointers"),
]
