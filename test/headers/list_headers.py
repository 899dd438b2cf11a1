#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prints every public header under include/ (one per line, relative path); detail/ is internal."""
import pathlib
import sys

root = pathlib.Path(sys.argv[1])
for path in sorted(root.rglob("*.hpp")):
    rel = path.relative_to(root).as_posix()
    if "/detail/" not in rel:
        print(rel)
