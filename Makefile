# miogen — every target sets up what it needs (a fresh machine needs nothing by hand).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

MIOPEN_VERSION ?= 3.5.2
SPEC_DIR       := specs/miopen
# `make specs HEADER=/opt/rocm/include/miopen/miopen.h [MIOPEN_VERSION=X.Y.Z] [PARSE_ARGS="-I ..."]`
HEADER     ?=
PARSE_ARGS ?=

.PHONY: all venv specs generate test typecheck bench clean help

all: generate

help:
	@echo "make generate            validate the committed specs (rendering: see issue 3)"
	@echo "make specs HEADER=...    parse a miopen.h into $(SPEC_DIR)/<MIOPEN_VERSION>.yaml"
	@echo "make test                unit, golden and setup-error tests + mypy --strict"
	@echo "make bench               speed benchmarks (figures printed)"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

venv: $(STAMP)

specs: $(STAMP)
	@test -n "$(HEADER)" || { echo "usage: make specs HEADER=path/to/miopen.h [MIOPEN_VERSION=X.Y.Z]"; exit 2; }
	$(PY) -m codegen parse $(HEADER) --beta --miopen-version $(MIOPEN_VERSION) $(PARSE_ARGS) -o $(SPEC_DIR)/$(MIOPEN_VERSION).yaml

generate: $(STAMP)
	$(PY) -m codegen check $(SPEC_DIR)/*.*.*.yaml

typecheck: $(STAMP)
	$(PY) -m mypy --strict codegen

test: $(STAMP)
	$(PY) -m pytest tests
	$(PY) -m mypy --strict codegen

bench: $(STAMP)
	$(PY) benchmarks/parse_speed.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache
