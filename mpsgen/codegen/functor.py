"""Text rendering shared by the planners, the compile gate and ``try``: an elementwise op's
functor (from its expression, body or scaffold, with the params typedefs of an op with
parameters) and the plain specs a selector's cases stand for."""

from __future__ import annotations

import re
import textwrap
from dataclasses import replace

from mpsgen.core.errors import BadInput
from mpsgen.codegen.params import render_expr_functor, render_typedefs
from mpsgen.spec.registrations import input_dtypes
from mpsgen.core.render import render
from mpsgen.spec.op import OpSpec

_PARAMS = {1: ["x"], 2: ["a", "b"], 3: ["a", "b", "c"]}


def render_functor(spec: OpSpec) -> str:
    params = _PARAMS[spec.arity]
    alpha_type = "U" if spec.kind == "unary_alpha" else "T"
    common = dict(op=spec.name, params=params, alpha=spec.has_alpha, alpha_type=alpha_type)
    f = spec.functor
    if spec.has_params:  # the functor, then the params type of each registered input type
        if f.expr is not None:
            functor = render_expr_functor(spec, f.expr.strip())
        elif f.body is not None:
            functor = _body_functor(spec)
        else:
            functor = render("metal/functor_scaffold.metal.j2", **common)
        return functor + "\n\n" + render_typedefs(spec, [i for i, _o in input_dtypes(spec)])
    if f.expr is not None:
        return render("metal/functor_expr.metal.j2", expr=f.expr.strip(), int2float="int2float" in spec.dtypes, **common)
    if f.body is not None:
        return _body_functor(spec)
    return render("metal/functor_scaffold.metal.j2", **common)


def _body_functor(spec: OpSpec) -> str:
    """The functor from a spec's struct body (or whole struct)."""
    f = spec.functor
    body = (f.body or "").strip("\n")
    if re.match(r"\s*struct\s", body):
        if not re.match(rf"\s*struct\s+{spec.name}_functor\b", body):
            raise BadInput(
                f"the functor given for {spec.name} defines another struct; it must be `struct {spec.name}_functor`.",
                hint=f"(from {f.origin})",
            )
        return body.rstrip().rstrip(";") + ";" if not body.rstrip().endswith("};") else body.rstrip()
    body = textwrap.dedent(body)
    return render("metal/functor_body.metal.j2", op=spec.name, body=textwrap.indent(body, "  "))


def variant_specs(kspec: OpSpec) -> list[OpSpec]:
    """The kernels a spec writes: itself, or for a selector (gelu's ``approximate``) one plain
    spec per case, named after its kernel, with its functor."""
    if kspec.selector is None:
        return [kspec]
    return [
        replace(kspec, name=c.kernel, functor=kspec.functors[c.kernel], selector=None, functors={})
        for c in kspec.selector.cases
    ]
