#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prints every public header under include/ (one per line, relative path); detail/ is internal.

registry/instantiate_kernels.hpp is left out: it is the explicit instantiation of the default kernel
tables (minutes to compile), and test/kernels/default_kernels.cpp is that header on its own.
--onnx lists the headers of the ONNX importer (typeflow/onnx/, which need ONNX and protobuf) instead
of the others, --onednn those of the oneDNN kernels (typeflow/kernels/onednn/, which need oneDNN).

Each line is "eigen PATH" when the header includes Eigen's Tensor module, directly or through
typeflow's own headers (test/meson.build pre-includes a precompiled Eigen in those units: Eigen's
include guards then make the header's own include of it free), and "plain PATH" when it does not
(those units get nothing pre-included, so a standard header they forget is still an error)."""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
parts = {"--onnx": "typeflow/onnx/", "--onednn": "typeflow/kernels/onednn/"}
wanted = next((folder for flag, folder in parts.items() if flag in sys.argv), None)
include = re.compile(r"^\s*#\s*include\s*<([^>]+)>", re.MULTILINE)
eigen_headers = ("unsupported/Eigen/", "Eigen/")
includes = {}  # header -> the headers it includes


def reaches_eigen(rel, seen):
    """Whether rel includes Eigen, itself or through the typeflow headers it includes."""
    if rel in seen:
        return False
    seen.add(rel)
    if rel not in includes:
        path = root / rel
        includes[rel] = include.findall(path.read_text(encoding="utf-8")) if path.is_file() else []
    return any(name.startswith(eigen_headers) or
               (name.startswith("typeflow/") and reaches_eigen(name, seen)) for name in includes[rel])


for path in sorted(root.rglob("*.hpp")):
    rel = path.relative_to(root).as_posix()
    part = next((folder for folder in parts.values() if rel.startswith(folder)), None)
    if "/detail/" not in rel and rel != "typeflow/registry/instantiate_kernels.hpp" and part == wanted:
        print(("eigen " if reaches_eigen(rel, set()) else "plain ") + rel)
