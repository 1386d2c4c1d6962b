PY ?= python3

.PHONY: install quickstart lint typecheck test bench

install:
	$(PY) -m pip install -q -e '.[dev]'

quickstart:
	$(PY) -m pip install -q . && loomctx build --example

lint:
	$(PY) -m ruff check loomctx tests benchmarks examples

typecheck:
	$(PY) -m mypy loomctx

test: install
	$(PY) -m pytest -q

bench:
	$(PY) -m pip install -q -e '.[dev,bench]'
	$(PY) benchmarks/run_all.py
