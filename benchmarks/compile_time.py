#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""compile_time.py SOURCE_ROOT CXX [--json FILE]

Compile time and peak memory (BENCHMARKS.md, "Compile time"), with release flags:
  - `#include <typeflow/typeflow.hpp>` alone, against including Eigen's Tensor module alone
    (the part of the cost typeflow cannot avoid);
  - each unit-test translation unit, against the same include-only baseline.
Each figure is the median of three compilations, measured with /usr/bin/time.
"""
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

root = pathlib.Path(sys.argv[1]).resolve()
cxx = sys.argv[2]
json_path = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
flags = ["-std=c++20", "-O3", "-DNDEBUG", "-march=native", "-DEIGEN_USE_THREADS", f"-I{root/'include'}",
         "-isystem", "/usr/include/eigen3", "-c", "-o", os.devnull]


def measure(source: pathlib.Path, reps: int = 3):
    seconds, peaks = [], []
    for _ in range(reps):
        proc = subprocess.run(["/usr/bin/time", "-f", "%e %M", cxx, *flags, str(source)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"compiling {source} failed:\n{proc.stderr[-3000:]}")
        wall, peak_kb = proc.stderr.strip().splitlines()[-1].split()
        seconds.append(float(wall))
        peaks.append(int(peak_kb) / 1024)
    return statistics.median(seconds), max(peaks)


records = []


def report(case, ours, base, base_name):
    for metric, unit, i in (("compile time", "s", 0), ("peak memory", "MiB", 1)):
        r = {"benchmark": "compile", "case": case, "metric": metric, "unit": unit, "typeflow": round(ours[i], 3),
             "baseline": round(base[i], 3), "baseline_name": base_name, "ratio": round(ours[i] / base[i], 3)}
        records.append(r)
        print(f"{'compile':<34} {case + ' (' + metric + ')':<46} {ours[i]:>9.2f}{unit:<3} {base[i]:>9.2f}{unit:<3}"
              f" {r['ratio']:>7.3f}  {base_name}", flush=True)


with tempfile.TemporaryDirectory() as tmp:
    tmp = pathlib.Path(tmp)
    (tmp / "eigen_only.cpp").write_text("#include <unsupported/Eigen/CXX11/Tensor>\nint main() { return 0; }\n")
    (tmp / "typeflow_only.cpp").write_text("#include <typeflow/typeflow.hpp>\nint main() { return 0; }\n")
    base = measure(tmp / "eigen_only.cpp")
    report("#include <typeflow/typeflow.hpp>", measure(tmp / "typeflow_only.cpp"), base, "#include Eigen Tensor")
    for test in sorted((root / "test" / "unit").glob("test_*.cpp")):
        report(f"unit test {test.stem}", measure(test, reps=1), base, "#include Eigen Tensor")

if json_path:
    pathlib.Path(json_path).write_text(json.dumps(records, indent=2) + "\n")
