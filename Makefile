# The two commands of README.md: `make check` (the main job) and `make test` (the suite).
PYTHON ?= python3

.PHONY: setup check test bench

setup:
	@bash scripts/setup.sh

check: setup
	fuselens check examples/ --exit-zero

test: setup
	@bash scripts/run-tests.sh

bench: setup
	$(PYTHON) bench/analysis_bench.py
