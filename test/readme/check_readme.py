#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_readme.py README.md WORK_DIR COMPILER ARGS...

Compiles every ```cpp block of README.md as written, each as its own translation unit (ARGS include
-fsyntax-only), and fails naming the block's first line in the README when one does not compile.
A block without an #include line is a fragment of namespace-scope code and gets the prelude
`#include <typeflow/typeflow.hpp>` and `namespace tf = typeflow;`; everything else in it is as the
reader sees it (statements live in functions, every name is defined). The default kernel tables are
declared extern (-include typeflow/registry/extern_kernels.hpp): a block is only compiled, never
linked, and the tables themselves are compiled in test/kernels/.
"""
import concurrent.futures
import os
import pathlib
import re
import subprocess
import sys

readme, work, cmd = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3:]
# After the precompiled prelude where test/meson.build gives one: then it is already included (#pragma once).
cmd = cmd + ["-include", "typeflow/registry/extern_kernels.hpp"]
work.mkdir(parents=True, exist_ok=True)
prelude = "#include <typeflow/typeflow.hpp>\nnamespace tf = typeflow;\n"

blocks = []  # (first line in the README, source)
lines = readme.read_text(encoding="utf-8").splitlines()
i = 0
while i < len(lines):
    if re.fullmatch(r"```(cpp|c\+\+)(\s.*)?", lines[i].strip()):
        start = i + 2
        body = []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i])
            i += 1
        source = "\n".join(body) + "\n"
        if not re.search(r"^\s*#include", source, re.M):
            source = prelude + source
        blocks.append((start, source))
    i += 1
if not blocks:
    sys.exit(f"{readme}: no ```cpp block found")


def check(block):
    line, source = block
    path = work / f"readme_line_{line}.cpp"
    path.write_text(source, encoding="utf-8")
    proc = subprocess.run(cmd + [str(path)], capture_output=True, text=True)
    return line, proc.returncode, proc.stdout + proc.stderr


failed = 0
# Two compilers at once at most: Meson runs other suites beside this one.
with concurrent.futures.ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
    for line, code, output in pool.map(check, blocks):
        if code != 0:
            failed += 1
            print(f"{readme}:{line}: the block starting here does not compile:\n{output[-4000:]}")
        else:
            print(f"{readme}:{line}: compiles")
if failed:
    sys.exit(f"{failed} of {len(blocks)} README code blocks do not compile")
print(f"all {len(blocks)} README code blocks compile")
