#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""summary.py RESULTS_DIR: one table of every record in RESULTS_DIR/*.json."""
import json
import pathlib
import sys

rows = []
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    rows += json.loads(path.read_text())
print(f"\n{'benchmark':<12} {'case':<56} {'typeflow':>12} {'baseline':>12} {'ratio':>7}  baseline")
for r in rows:
    unit = r["unit"]
    case = r["case"] if r["metric"] == "time" else f"{r['case']} ({r['metric']})"
    print(f"{r['benchmark']:<12} {case:<56} {r['typeflow']:>9.3f} {unit:<3}{r['baseline']:>9.3f} {unit:<3}"
          f"{r['ratio']:>7.3f}  {r['baseline_name']}")
