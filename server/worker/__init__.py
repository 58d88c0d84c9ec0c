"""Running user code out of process: runner.py (server side) and child.py (the worker script)."""
