# The README's two commands are `make demo` and `make test`; CI runs .ci/run, which calls `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
CASE ?= examples/cases/diagnostic-myocarditis.yaml
PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check

.PHONY: venv install demo dev test lint bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

venv: $(BIN)/python

install: venv
	$(PIP) -e .

# After the run: the next three commands to try, with the run's own paths (the newest folder under runs/).
demo: install
	$(BIN)/python -m consilium simulate --case $(CASE)
	@run=$$(ls -td runs/*/ | head -1); run=$${run%/}; \
	echo; echo "Next, try:"; \
	echo "  $(BIN)/python -m consilium view $$run       # the run as one HTML page"; \
	echo "  $(BIN)/python -m consilium replay" $$run/*.trace.json "  # re-run it, zero model calls"; \
	echo "  $(BIN)/python -m consilium judge" $$run/*.structured.trace.json \
	  "--rubric nmb-diagnosis-match --judge-model embedded  # score its diagnosis (about a minute)"

dev: venv
	$(PIP) -e '.[dev,ray,otel,studio,export,analysis,postgres]'

test: dev
	$(BIN)/python -m pytest

lint: dev
	$(BIN)/ruff check .
	$(BIN)/mypy

bench: dev
	$(BIN)/python benchmarks/suite.py
