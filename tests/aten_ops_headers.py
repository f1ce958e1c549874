"""Write the per-operator ATen/ops headers of some operators from a tree's native_functions.yaml,
with the torchgen of the release being checked: run as a script (``python aten_ops_headers.py
YAML TAGS OUT NAME...``) with that torchgen first on sys.path (tests/host_clang.py does so).

It is what PyTorch's own build does for an MPS build (torchgen.gen.gen_per_operator_headers, MPS
kept, XPU and MTIA dropped as a macOS build drops them), on the yaml rows of the named operators
only: the ``<name>.h``, ``<name>_ops.h``, ``<name>_meta.h`` and ``<name>_native.h`` of a name are
made from its own rows (a root name's rows are every overload of it, its in-place and out
variants), so parsing them alone gives the headers the whole file gives, in a fraction of the
time. A wheel's own ATen/ops headers will not do for an MPS .mm: a Linux wheel is built without
MPS, so its ``_native.h`` headers declare no ``*_mps`` kernel at all."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml
from torchgen.gen import (
    LineLoader,
    gen_per_operator_headers,
    get_grouped_native_functions,
    parse_native_yaml_struct,
    parse_tags_yaml,
)
from torchgen.model import DispatchKey
from torchgen.selective_build.selector import SelectiveBuilder
from torchgen.utils import FileManager

# a top-level entry of native_functions.yaml starts with `- func: name[.overload](`
_ENTRY = re.compile(r"^- func: ([A-Za-z0-9_]+)", re.M)


def root_name(func_name: str) -> str:
    """torchgen's NativeFunction.root_name of a `func:` name: the base name without a trailing
    in-place `_` (dunder names such as __iand__ keep theirs)."""
    if func_name.startswith("__") and func_name.endswith("__"):
        return func_name
    return func_name[:-1] if func_name.endswith("_") else func_name


def entries_of(yaml_text: str, names: set[str]) -> str:
    """The text of the yaml entries whose root name is one of ``names`` (line numbers kept)."""
    starts = [m.start() for m in _ENTRY.finditer(yaml_text)] + [len(yaml_text)]
    kept, line = [], 0
    for begin, end in zip(starts, starts[1:]):
        if root_name(_ENTRY.match(yaml_text, begin).group(1)) in names:
            # blank lines in place of the others keep each entry's __line__ its own
            at = yaml_text.count("\n", 0, begin)
            kept += ["\n" * (at - line), yaml_text[begin:end]]
            line = at + yaml_text.count("\n", begin, end)
    return "".join(kept)


def main(yaml_path: str, tags_path: str, out: str, *names: str) -> None:
    text = entries_of(Path(yaml_path).read_text(encoding="utf-8"), set(names))
    es = yaml.load(text, Loader=LineLoader) or []
    ignore = {DispatchKey.XPU, DispatchKey.MTIA}
    parsed = parse_native_yaml_struct(es, parse_tags_yaml(tags_path), ignore, path=yaml_path)
    templates = Path(sys.modules["torchgen"].__file__).parent / "packaged" / "ATen" / "templates"
    ops = FileManager(install_dir=Path(out) / "ATen" / "ops", template_dir=templates, dry_run=False)
    aggregates = FileManager(install_dir=Path(out) / ".aggregates", template_dir=templates, dry_run=False)
    gen_per_operator_headers(
        native_functions=parsed.native_functions,
        grouped_native_functions=get_grouped_native_functions(parsed.native_functions),
        static_dispatch_idx=[],
        selector=SelectiveBuilder.get_nop_selector(),
        backend_indices=parsed.backend_indices,
        cpu_fm=aggregates,
        device_fms={},
        ops_fm=ops,
        functions_keys=set(),
        dispatch_keys=[],
        rocm=False,
    )


if __name__ == "__main__":
    main(*sys.argv[1:])
