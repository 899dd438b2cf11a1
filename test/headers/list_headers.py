#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prints every public header under include/ (one per line, relative path); detail/ is internal.

registry/instantiate_kernels.hpp is left out: it is the explicit instantiation of the default kernel
tables (minutes to compile), and test/kernels/default_kernels.cpp is that header on its own.
--onnx lists the headers of the ONNX importer (typeflow/onnx/, which need ONNX and protobuf) instead
of the others, --onednn those of the oneDNN kernels (typeflow/kernels/onednn/, which need oneDNN)."""
import pathlib
import sys

root = pathlib.Path(sys.argv[1])
parts = {"--onnx": "typeflow/onnx/", "--onednn": "typeflow/kernels/onednn/"}
wanted = next((folder for flag, folder in parts.items() if flag in sys.argv), None)
for path in sorted(root.rglob("*.hpp")):
    rel = path.relative_to(root).as_posix()
    part = next((folder for folder in parts.values() if rel.startswith(folder)), None)
    if "/detail/" not in rel and rel != "typeflow/registry/instantiate_kernels.hpp" and part == wanted:
        print(rel)
