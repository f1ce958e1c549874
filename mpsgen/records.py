"""``Record``: the class syntax of :class:`typing.NamedTuple`, without importing typing.

``mpsgen check`` starts once per commit (pre-commit, lintrunner) and its modules declare
two dozen small record types. ``typing`` (with the modules it pulls in) is ~3 ms of a
~100 ms start-up that needs nothing else from it, so at run time the records are made by
:func:`collections.namedtuple` directly, as ``typing.NamedTuple`` itself makes them: the
annotated names are the fields (in order), a value given in the class body is the field's
default, and the class body's methods, properties and docstring are kept. Type checkers
see ``typing.NamedTuple``.

    class Location(Record):
        path: str
        line: int = 0
"""

from __future__ import annotations

import collections

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing; checkers take it as true)

_NOT_COPIED = frozenset({"__module__", "__qualname__", "__annotations__", "__orig_bases__", "__classcell__", "_record_root"})


class _RecordMeta(type):
    def __new__(mcls, name: str, bases: tuple, namespace: dict):
        if namespace.get("_record_root"):
            return super().__new__(mcls, name, bases, namespace)
        annotations = namespace.get("__annotations__", {})
        fields = list(annotations)
        defaults = [namespace[f] for f in fields if f in namespace]
        if defaults and any(f not in namespace for f in fields[len(fields) - len(defaults) :]):
            raise TypeError(f"{name}: a field without a default follows one with a default")
        cls = collections.namedtuple(name, fields, defaults=defaults, module=namespace.get("__module__"))
        for key, value in namespace.items():
            if key not in _NOT_COPIED and key not in annotations:
                setattr(cls, key, value)
        cls.__annotations__ = annotations
        if "__qualname__" in namespace:
            cls.__qualname__ = namespace["__qualname__"]
        return cls


if TYPE_CHECKING:
    from typing import NamedTuple as Record
else:

    class Record(metaclass=_RecordMeta):
        """Base of a record type (see the module's docstring)."""

        _record_root = True
