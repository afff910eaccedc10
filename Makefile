# miogen — every target sets up what it needs (a fresh machine needs nothing by hand).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

# the pinned release (written by `make upgrade`)
MIOPEN_VERSION ?= $(shell cat specs/miopen/pinned)
SPEC_DIR       := specs/miopen
# `make specs HEADER=/opt/rocm/include/miopen/miopen.h [MIOPEN_VERSION=X.Y.Z] [PARSE_ARGS="-I ..."]`
HEADER     ?=
PARSE_ARGS ?=
# --miopen-version only when given on the command line; otherwise the header's version.h decides
VERSION_ARG := $(if $(filter command line,$(origin MIOPEN_VERSION)),--miopen-version $(MIOPEN_VERSION),)

ANNOTATIONS    := $(SPEC_DIR)/annotations.yaml
GENERATED      := generated

.PHONY: all venv specs generate docs check-generated abi-check audit upgrade test typecheck bench clean help

all: generate

help:
	@echo "make generate            render generated/ from specs/miopen/$(MIOPEN_VERSION).yaml (HEADER=... parses first)"
	@echo "make abi-check HEADER=.. layout probe + call-through stub against a real miopen.h"
	@echo "make upgrade HEADER=...  parse a new release, diff, gate, pin, generate, test"
	@echo "make specs HEADER=...    parse a miopen.h into $(SPEC_DIR)/<MIOPEN_VERSION>.yaml"
	@echo "make audit SRC=...       compare the annotations with MIOpen's C++ implementation (docs/audit.md)"
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
	$(PY) -m codegen parse $(HEADER) --beta $(VERSION_ARG) $(PARSE_ARGS) -o $(SPEC_DIR)

generate: $(STAMP)
ifneq ($(HEADER),)
	@test "$(origin MIOPEN_VERSION)" = "command line" || { echo "make generate HEADER=... needs MIOPEN_VERSION=X.Y.Z (the release to render)"; exit 2; }
	$(PY) -m codegen parse $(HEADER) --beta $(VERSION_ARG) $(PARSE_ARGS) -o $(SPEC_DIR)/$(MIOPEN_VERSION).yaml
endif
	$(PY) -m codegen check $(SPEC_DIR)/*.*.*.yaml --annotations $(ANNOTATIONS)
	$(PY) -m codegen render $(SPEC_DIR)/$(MIOPEN_VERSION).yaml --annotations $(ANNOTATIONS) --history $(SPEC_DIR) -o $(GENERATED)
	$(PY) -m codegen changes $(SPEC_DIR)/*.*.*.yaml -o docs/api-changes.md

docs: $(STAMP)
	$(PY) -m codegen changes $(SPEC_DIR)/*.*.*.yaml -o docs/api-changes.md

# `make audit SRC=/tmp/miopen-src [MIOPEN_VERSION=3.3.0] [AUDIT_ARGS="-o docs/semantics-audit.md"]`:
# what MIOpen's implementation does with each pointer parameter vs the annotations (docs/audit.md).
SRC        ?=
AUDIT_ARGS ?=
audit: $(STAMP)
	@test -n "$(SRC)" || { echo "usage: make audit SRC=path/to/MIOpen-source-root [MIOPEN_VERSION=X.Y.Z] [AUDIT_ARGS=...]"; exit 2; }
	$(PY) -m codegen audit $(SRC) --spec $(SPEC_DIR)/$(MIOPEN_VERSION).yaml --annotations $(ANNOTATIONS) $(AUDIT_ARGS)

# `make upgrade HEADER=/opt/rocm/include/miopen/miopen.h`: parse -> diff against the pinned spec ->
# annotation gate -> pin the new release -> generate -> test.
upgrade: $(STAMP)
	@test -n "$(HEADER)" || { echo "usage: make upgrade HEADER=path/to/miopen.h [UPGRADE_ARGS='--miopen-version X.Y.Z -I DIR']"; exit 2; }
	$(PY) -m codegen upgrade $(HEADER) $(UPGRADE_ARGS)
	$(MAKE) generate MIOPEN_VERSION=$$(cat specs/miopen/pinned)
	$(MAKE) test MIOPEN_VERSION=$$(cat specs/miopen/pinned)

# CI: the committed generated/ must be exactly what `make generate` renders.
check-generated: $(STAMP)
	rm -rf .check-generated
	$(PY) -m codegen render $(SPEC_DIR)/$(MIOPEN_VERSION).yaml --annotations $(ANNOTATIONS) --history $(SPEC_DIR) -o .check-generated
	diff -r -x __pycache__ $(GENERATED) .check-generated || { echo "generated/ is stale: run make generate and commit"; exit 1; }
	$(PY) -m codegen changes $(SPEC_DIR)/*.*.*.yaml -o .check-generated/api-changes.md
	diff docs/api-changes.md .check-generated/api-changes.md || { echo "docs/api-changes.md is stale: run make generate and commit"; exit 1; }
	rm -rf .check-generated

abi-check: $(STAMP)
	@test -n "$(HEADER)" || { echo "usage: make abi-check HEADER=path/to/miopen.h [MIOPEN_VERSION=X.Y.Z]"; exit 2; }
	$(PY) -m codegen abi-check $(HEADER) $(VERSION_ARG) $(PARSE_ARGS)

# mypy --strict on codegen/, and on runtime/ + generated/ assembled as the installed `miopen` package
# (twice: with the .pyi stubs, and the implementation itself without them).
typecheck: $(STAMP)
	$(PY) -m mypy --strict codegen
	rm -rf .typecheck && mkdir -p .typecheck/stubs/miopen .typecheck/impl/miopen
	cp -r runtime/. .typecheck/stubs/miopen/ && cp -r $(GENERATED) .typecheck/stubs/miopen/_generated
	cp -r runtime/. .typecheck/impl/miopen/ && cp -r $(GENERATED) .typecheck/impl/miopen/_generated
	rm -f .typecheck/impl/miopen/_generated/*.pyi
	cp tests/fixtures/miopen_usage.py .typecheck/stubs/
	cd .typecheck/stubs && MYPYPATH=. ../../$(PY) -m mypy --strict --no-incremental miopen miopen_usage.py
	cd .typecheck/impl && MYPYPATH=. ../../$(PY) -m mypy --strict --no-incremental -p miopen
	rm -rf .typecheck

test: $(STAMP) check-generated typecheck
	$(PY) -m pytest tests

bench: $(STAMP)
	$(PY) benchmarks/parse_speed.py $(HEADER) $(BENCH_ARGS)
	$(PY) benchmarks/render_speed.py
	$(PY) benchmarks/import_time.py
	$(PY) benchmarks/call_overhead.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .check-generated .typecheck
