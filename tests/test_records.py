"""``Record`` makes the same classes as ``typing.NamedTuple`` (mpsgen.records)."""

from __future__ import annotations

import pickle
import subprocess
import sys
import typing

import pytest

from mpsgen.errors import Location
from mpsgen.records import Record


class Span(Record):
    """A span of lines."""

    path: str
    first: int
    last: int = 0
    tags: tuple[str, ...] = ()

    @property
    def size(self) -> int:
        return self.last - self.first + 1

    def moved(self, by: int) -> Span:
        return self._replace(first=self.first + by, last=self.last + by)


class TypedSpan(typing.NamedTuple):
    """A span of lines."""

    path: str
    first: int
    last: int = 0
    tags: tuple[str, ...] = ()


def test_fields_defaults_and_methods_as_typing_namedtuple():
    s = Span("a.mm", 3, 5)
    t = TypedSpan("a.mm", 3, 5)
    assert Span._fields == TypedSpan._fields == ("path", "first", "last", "tags")
    assert Span._field_defaults == TypedSpan._field_defaults == {"last": 0, "tags": ()}
    assert s == t == ("a.mm", 3, 5, ())
    assert repr(s) == "Span(path='a.mm', first=3, last=5, tags=())"
    assert s.size == 3 and s.moved(2) == ("a.mm", 5, 7, ()) and type(s.moved(2)) is Span
    assert Span("b", 1)._asdict() == {"path": "b", "first": 1, "last": 0, "tags": ()}
    assert Span.__doc__ == "A span of lines." and Span.__module__ == __name__ and Span.__qualname__ == "Span"
    assert Span.__annotations__ == {"path": "str", "first": "int", "last": "int", "tags": "tuple[str, ...]"}
    assert isinstance(s, tuple) and not hasattr(s, "__dict__")
    with pytest.raises(AttributeError):
        s.path = "b"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Span("a.mm")  # first has no default


def test_pickles_and_copies_by_name():
    loc = Location("x.mm", 3, 4)
    assert pickle.loads(pickle.dumps(loc)) == loc and str(loc) == "x.mm:3:4"
    assert pickle.loads(pickle.dumps(Span("a", 1))) == Span("a", 1)


def test_a_field_without_default_after_one_with_is_refused():
    with pytest.raises(TypeError, match="without a default"):

        class Bad(Record):
            a: int = 0
            b: int


def test_check_path_does_not_import_typing():
    code = "import sys; import mpsgen.check, mpsgen.check.config, mpsgen.check.formats, mpsgen.cli_check; print('typing' in sys.modules)"
    out = subprocess.run([sys.executable, "-S", "-c", f"import sys; sys.path.insert(0, {str(__import__('pathlib').Path(__file__).resolve().parents[1])!r}); {code}"], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr
