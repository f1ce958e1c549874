"""Jinja2 rendering of the code shapes kept in ``templates/``."""

from __future__ import annotations

from functools import lru_cache

import jinja2

from mpsgen.core.resources import resource_dir


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resource_dir("templates"))),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def render(template: str, **context: object) -> str:
    return environment().get_template(template).render(**context).rstrip("\n")
