#!/usr/bin/env bash
# Runs the whole test suite, one worker per CPU (pytest-xdist; the VS Code tests stay on one
# worker, as one group). pytest's exit code 5 ("no tests collected") is a failure here.
set -uo pipefail
cd "$(dirname "$0")/.."
python3 -m pytest -q -n auto --dist loadgroup --durations=15 "$@"
status=$?
if [ "$status" -eq 5 ]; then
    echo "error: pytest collected no tests" >&2
    exit 1
fi
exit "$status"
