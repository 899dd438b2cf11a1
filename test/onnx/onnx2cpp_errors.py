#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# onnx2cpp on bad command lines, files and options: each must exit with status 1 (not a crash or a
# signal) and print a message that names what was wrong; and a graph file (.tfg) goes through as
# an ONNX model does.
#   onnx2cpp_errors.py ONNX2CPP MODEL.onnx GRAPH.tfg WORK_DIR
import os
import subprocess
import sys

onnx2cpp, model, graph, work = sys.argv[1:5]
os.makedirs(work, exist_ok=True)
out = os.path.join(work, "m.hpp")
cases = [
    ([], "usage: onnx2cpp MODEL.onnx|GRAPH.tfg OUT.hpp"),
    ([model, out, "--frobnicate"], "unknown option '--frobnicate'"),
    ([model, out, "--name"], "--name needs a value"),
    (["/nonexistent/m.onnx", out], "cannot open ONNX model '/nonexistent/m.onnx'"),
    (["/nonexistent/g.tfg", out], "cannot open graph file '/nonexistent/g.tfg'"),
    ([model, out, "--name", "2x"], "to_cpp: struct_name '2x' is not a C++ identifier"),
    ([model, out, "--namespace", "a::"], "to_cpp: namespace_name 'a::' is not a C++ namespace name"),
    ([model, out, "--output", "nope"], "to_cpp: output 'nope' is not a tensor of the graph"),
    ([model, "/nonexistent/dir/m.hpp"], "cannot write safetensors file '/nonexistent/dir/m.safetensors'"),
    ([model, out, "--weights", "/nonexistent/dir/w.safetensors"], "cannot write safetensors file '/nonexistent/dir/w.safetensors'"),
]
failed = 0
for args, expected in cases:
    p = subprocess.run([onnx2cpp] + args, capture_output=True, text=True, timeout=120)
    if p.returncode == 1 and expected in p.stderr:
        print(f"ok: {' '.join(args)} -> {p.stderr.strip()}")
    else:
        failed += 1
        print(f"FAIL: onnx2cpp {' '.join(args)}\n  exit {p.returncode}, stderr: {p.stderr.strip()}\n  expected: {expected}")
# A graph file: the header and the weights are written, the header names the struct.
p = subprocess.run([onnx2cpp, graph, out, "--name", "small_mlp"], capture_output=True, text=True, timeout=120)
header = open(out).read() if os.path.exists(out) else ""
if p.returncode != 0 or "struct small_mlp {" not in header or not os.path.exists(os.path.join(work, "m.safetensors")):
    failed += 1
    print(f"FAIL: onnx2cpp {graph}: exit {p.returncode}, stderr: {p.stderr.strip()}")
else:
    print(f"ok: {graph} -> {p.stdout.strip()}")
sys.exit(1 if failed else 0)
