"""Facts of Metal's C++ dialect that the compile gate and the kernel-spec checks share."""

from __future__ import annotations

import re

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
