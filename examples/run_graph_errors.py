#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# run_graph on bad command lines and bad files: each must exit with status 1 (not a crash or a
# signal) and print a message that names what was wrong.
#   run_graph_errors.py RUN_GRAPH GRAPH
import subprocess
import sys

run_graph, graph = sys.argv[1], sys.argv[2]
cases = [
    ([graph, "--feed", "x=2x4", "--threads", "100000"], "--threads 100000: expected a whole number from 0"),
    ([graph, "--feed", "x=2x4", "--threads", "-1"], "--threads -1: expected a whole number"),
    ([graph, "--feed", "x=2x4", "--threads", "abc"], "--threads abc: expected a whole number"),
    ([graph, "--feed", "x=2x4", "--threads", "99999999999999999999"], "--threads 99999999999999999999: expected"),
    ([graph, "--feed", "x=2x4", "--trace", "/nonexistent/dir/t.json"],
     "cannot write trace file '/nonexistent/dir/t.json': No such file or directory"),
    ([graph, "--feed", "x=2x4", "--dot", "/nonexistent/dir/g.dot"], "cannot write graph file '/nonexistent/dir/g.dot'"),
    ([graph, "--feed", "x=1099511627776x1099511627776:1"],
     "--feed x=1099511627776x1099511627776:1: shape [1099511627776, 1099511627776] is too large"),
    ([graph, "--feed", "x=1099511627776x1024:1"], "--feed x=1099511627776x1024:1: "),
    ([graph, "--feed", "x=2x4:1e300"], "--feed x=2x4:1e300: value 1.0000000000000001e+300 does not fit in the node's dtype f32"),
    (["/dev/zero"], "graph file '/dev/zero' is not a regular file"),
    (["/"], "graph file '/' is a directory"),
]
failed = 0
for args, expected in cases:
    p = subprocess.run([run_graph] + args, capture_output=True, text=True, timeout=60)
    ok = p.returncode == 1 and expected in p.stderr
    if not ok:
        failed += 1
        print(f"FAIL: run_graph {' '.join(args)}\n  exit {p.returncode}, stderr: {p.stderr.strip()}\n  expected: {expected}")
    else:
        print(f"ok: {' '.join(args)} -> {p.stderr.strip()}")
sys.exit(1 if failed else 0)
