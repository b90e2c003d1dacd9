"""Stands in for the rendered wrapper script in the tests: it records how it
was started (arguments, working directory, one environment variable) in the
file named by KAGENT_TEST_WRAPPER_LOG, and fails when KAGENT_TEST_WRAPPER_FAIL
is set, as a candidate that raises would."""

import json
import os
import sys

if log := os.environ.get("KAGENT_TEST_WRAPPER_LOG"):
    with open(log, "a") as f:
        f.write(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(),
                            "env": os.environ.get("KAGENT_TEST_WRAPPER_ENV", "")}) + "\n")
if os.environ.get("KAGENT_TEST_WRAPPER_FAIL"):
    print("Traceback (most recent call last):", file=sys.stderr)
    print('  File "candidate.py", line 12, in forward', file=sys.stderr)
    print("RuntimeError: HIP error: invalid device function", file=sys.stderr)
    sys.exit(1)
