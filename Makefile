PY ?= python3
CHROMIUM ?= /usr/bin/chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: install quickstart lint typecheck test bench

# The report pages are tested in Debian's chromium (never a browser Playwright downloads);
# apt-get update only when the install fails without it.
install:
	@[ -x $(CHROMIUM) ] || { export DEBIAN_FRONTEND=noninteractive; \
	  $(SUDO) apt-get install -y -q chromium || \
	  { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q chromium; }; }
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
	$(PY) benchmarks/run_all.py $(if $(LOCOMO),--locomo $(LOCOMO))
