#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check.py CASE.cpp COMPILER ARGS...

Compiles CASE.cpp (syntax only) and passes when the compiler rejects it with a message containing
every line of the case's `// expect: ...` comments, and, where the case has a `// max-line: N`
comment, with no line of the compiler's output longer than N characters (the library's own types
must print short). A case that compiles is a failure: the error it guards against would reach users
as silent wrong behaviour or as an unreadable message.
The message must be in the first error, the one a reader meets first: the case is compiled with
-Wfatal-errors, so the compiler stops there instead of instantiating the rest of the unit (with GCC
and the precompiled header, about 1 s a case instead of 2.5). A case whose check reads more than
that error, the notes GCC prints after it (`// output: all`, e.g. the concept a candidate did not
satisfy; Clang keeps a fatal error's notes) or
every line's length (`// max-line: N`), is compiled without it.
Under Clang, compile_error prints its message in lines (core/compile_error.hpp); they are joined
before the check.
"""
import re
import subprocess
import sys

case, cmd = sys.argv[1], sys.argv[2:]
with open(case, encoding="utf-8") as f:
    lines = f.readlines()
expected = [line.split("// expect:", 1)[1].strip() for line in lines if line.startswith("// expect:")]
max_line = [int(line.split("// max-line:", 1)[1]) for line in lines if line.startswith("// max-line:")]
if not expected:
    sys.exit(f"{case}: no '// expect:' line says what the error must contain")

whole_output = max_line or any(line.strip() == "// output: all" for line in lines)
proc = subprocess.run(cmd + ([] if whole_output else ["-Wfatal-errors"]) + [case], capture_output=True, text=True)
output = proc.stdout + proc.stderr
# message_lines<fixed_string<35>{"add: shapes [2, 3] and [4, 3] do "}, fixed_string<...>{"not ..."}>
output += "\n" + re.sub(r'"\}, (?:\w+::)*fixed_string<\d+(?:UL)?(?: - 1)?>\{"', "", output)
if proc.returncode == 0:
    sys.exit(f"{case}: compiled, but it must not")
missing = [e for e in expected if e not in output]
if missing:
    print(output[-6000:])
    sys.exit(f"{case}: the compiler's message lacks: {missing}")
longest = max((len(line) for line in (proc.stdout + proc.stderr).splitlines()), default=0)
if max_line and longest > max_line[0]:
    sys.exit(f"{case}: the compiler's longest line has {longest} characters; at most {max_line[0]} are allowed")
print(f"{case}: rejected as expected")
