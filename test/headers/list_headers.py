#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prints every public header under include/ (one per line, relative path); detail/ is internal.

registry/instantiate_kernels.hpp is left out: it is the explicit instantiation of the default kernel
tables (minutes to compile), and test/kernels/default_kernels.cpp is that header on its own."""
import pathlib
import sys

root = pathlib.Path(sys.argv[1])
for path in sorted(root.rglob("*.hpp")):
    rel = path.relative_to(root).as_posix()
    if "/detail/" not in rel and rel != "typeflow/registry/instantiate_kernels.hpp":
        print(rel)
