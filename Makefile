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

demo: install
	$(BIN)/python -m consilium simulate --case $(CASE)

dev: venv
	$(PIP) -e '.[dev,ray]'

test: dev
	$(BIN)/python -m pytest

lint: dev
	$(BIN)/ruff check .
	$(BIN)/mypy

bench: dev
	$(BIN)/python benchmarks/suite.py
