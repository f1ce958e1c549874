"""The compiler's error lines, read once for the gate and ``try``: g++ and clang++ shapes, fatal
errors, notes and context lines (not errors), the first error inside the user's lines."""

from __future__ import annotations

from mpsgen.shim.diagnostics import CompilerError, compiler_errors, first_inside, last_said

GCC = """\
In file included from driver.cpp:1:
metal_shim.h: In instantiation of 'T metal::pow(T, T) [with T = bool]':
driver.cpp:14:20:   required from here
metal_shim.h:210:10: error: no matching function for call to 'pow(bool&, bool&)'
  210 |   return std::pow(a, b);
driver.cpp:12:16: error: 'missing_name' was not declared in this scope
   12 |     return a + missing_name;
      |                ^~~~~~~~~~~~
driver.cpp:20:5: note: in expansion of macro 'CASE'
driver.cpp:13:9: error: expected ';' before '}' token
"""

CLANG = """\
driver.cpp:12:16: error: use of undeclared identifier 'missing_name'
    return a + missing_name;
               ^
driver.cpp:30:3: note: in instantiation of function template specialization 'f<float>' requested here
1 error generated.
"""

FATAL = """\
driver.cpp:2:10: fatal error: metal_shimx.h: No such file or directory
    2 | #include "metal_shimx.h"
compilation terminated.
"""


def test_gcc_errors_in_order_with_file_line_col_and_message_as_written():
    assert compiler_errors(GCC) == [
        CompilerError("metal_shim.h", 210, 10, "no matching function for call to 'pow(bool&, bool&)'"),
        CompilerError("driver.cpp", 12, 16, "'missing_name' was not declared in this scope"),
        CompilerError("driver.cpp", 13, 9, "expected ';' before '}' token"),
    ]


def test_clang_error_and_its_note_is_not_an_error():
    assert compiler_errors(CLANG) == [CompilerError("driver.cpp", 12, 16, "use of undeclared identifier 'missing_name'")]


def test_a_fatal_error_is_an_error_unless_left_out():
    assert compiler_errors(FATAL) == [CompilerError("driver.cpp", 2, 10, "metal_shimx.h: No such file or directory", True)]
    assert compiler_errors(FATAL, fatal=False) == []


def test_only_the_files_asked_for():
    assert [e.file for e in compiler_errors(GCC, "driver.cpp")] == ["driver.cpp", "driver.cpp"]
    assert [e.line for e in compiler_errors("/tmp/x/driver.cpp:3:1: error: a\nshim.h:4:2: error: b\n", "driver.cpp")] == [3]


def test_the_message_is_not_stripped():
    assert compiler_errors("driver.cpp:1:2: error: trailing  \n")[0].message == "trailing  "


def test_the_first_error_inside_the_lines_and_none_outside():
    errors = compiler_errors(GCC)
    assert first_inside(errors, 12, 13) == errors[1]
    assert first_inside(errors, 13, 13) == errors[2]
    assert first_inside(errors, 1, 11) is None
    assert errors[1].inside(12, 12) and not errors[1].inside(13, 20)


def test_no_error_at_all():
    assert compiler_errors("") == [] and compiler_errors("ld: cannot find -lfoo\ncollect2: error: ld returned 1 exit status\n") == []
    assert first_inside([], 1, 100) is None


def test_what_the_compiler_said_last():
    assert last_said("warning: x\ncollect2: error: ld returned 1 exit status\n\n") == "collect2: error: ld returned 1 exit status"
    assert last_said("  \n") == "the compiler failed" and last_said("", "unknown") == "unknown"
