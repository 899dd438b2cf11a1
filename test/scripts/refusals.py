#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The project's scripts on bad arguments and settings: each must exit with status 2 and a message
# naming what was wrong, before it installs, configures or builds anything (a few seconds at most).
#   refusals.py SOURCE_ROOT WORK_DIR
import os
import shutil
import subprocess
import sys

root, work = sys.argv[1:3]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
consumer_work = os.path.join(work, "consumer")
cases = [
    # (command, extra environment, what the message must contain)
    (["scripts/fuzz", "0"], {}, "SECONDS must be a whole number of seconds, at least 1, not '0'"),
    (["scripts/fuzz", "1m"], {}, "SECONDS must be a whole number of seconds, at least 1, not '1m'"),
    (["scripts/test", "--sanitize", "memory"], {}, "--sanitize takes thread or address, not memory"),
    (["scripts/test", "--sanitize", "thread memory"], {}, "--sanitize takes thread or address, not memory"),
    (["scripts/bench", "--fast"], {}, "usage: scripts/bench [--quick] [--no-native]"),
    (["test/consumer/run.sh", root, consumer_work, os.path.join(work, "no-build")], {"TYPEFLOW_CONSUMER_CUDA": "yes"},
     "TYPEFLOW_CONSUMER_CUDA must be 1 (build the subproject's CUDA consumer), 0 (do not) or unset (where a GPU is), not 'yes'"),
]
failed = 0
for command, env, expected in cases:
    what = " ".join(f"{k}={v}" for k, v in env.items()) + (" " if env else "") + " ".join(command)
    p = subprocess.run([os.path.join(root, command[0])] + command[1:], cwd=work, env={**os.environ, **env},
                       capture_output=True, text=True, timeout=60)
    if p.returncode == 2 and expected in p.stderr:
        print(f"ok: {what} -> {p.stderr.strip()}")
    else:
        failed += 1
        print(f"FAIL: {what}\n  exit {p.returncode}, stderr: {p.stderr.strip()[-2000:]}\n  expected exit 2 and: {expected}")
# run.sh refused before touching its work folder.
if os.path.exists(consumer_work):
    failed += 1
    print(f"FAIL: test/consumer/run.sh created {consumer_work} before refusing its setting")
sys.exit(1 if failed else 0)
