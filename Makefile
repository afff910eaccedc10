# miogen — every target sets up what it needs (a fresh machine needs nothing by hand).
#
# Variables (the same meaning for every target; anything else on the command line is an error):
#   HEADER=path/miopen.h   a header to parse (specs, generate, upgrade, abi-check, bench)
#   MIOPEN_VERSION=X.Y.Z   with HEADER: its release (default: the version.h beside it);
#                          without: the release `make test` runs the runtime suite against (every
#                          committed release is always rendered; default: the pinned, newest one)
#   PARSE_ARGS="-I DIR -D NAME --no-shims"   extra parse options, passed to every parse
#   UPGRADE_ARGS=...       extra options for `miogen upgrade` (older spelling of PARSE_ARGS for upgrade)
#   UPGRADE_TEST='CMD'     the test step of `make upgrade` (default: make test); e.g. a focused subset:
#                          UPGRADE_TEST='$$(PY) -m pytest tests/runtime/test_releases.py'
#   BENCH_ARGS=...         extra options for benchmarks/run_all.py
#   REAL_MIOPEN_ARGS=...   options for scripts/build_real_miopen.sh (make real-miopen)
#   REAL_MIOPEN_OCL_ARGS=... options for scripts/build_real_miopen_ocl.sh (make real-miopen-ocl)
#   REAL_MIOPEN_DEBIAN_ARGS=... options for scripts/real_miopen_debian.sh (make real-miopen-debian)
#   SRC=DIR  AUDIT_ARGS=... a MIOpen source tree and extra options for `make audit` (docs/audit.md)
#   PYTHON=python3.X       the interpreter that creates .venv;  VENV=DIR  where it lives
PYTHON ?= python3
# paths may hold spaces: recipes quote them; a make target or prerequisite escapes them (\ )
space := $(subst ,, )
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := PIP_ROOT_USER_ACTION=ignore "$(PY)" -m pip --disable-pip-version-check -qq
STAMP  := $(subst $(space),\ ,$(VENV))/.installed
# every package the venv holds, pinned with hashes (pip-compile format); `make lock` refreshes it
LOCK   := requirements.lock
PIP_TOOLS := pip-tools==7.6.2
LOCK_ARGS := --quiet --extra test --extra docs --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url --no-emit-find-links

KNOWN_VARS := PYTHON VENV HEADER MIOPEN_VERSION PARSE_ARGS UPGRADE_ARGS UPGRADE_TEST BENCH_ARGS REAL_MIOPEN_ARGS REAL_MIOPEN_OCL_ARGS REAL_MIOPEN_DEBIAN_ARGS SRC AUDIT_ARGS
CMDLINE_VARS := $(strip $(foreach v,$(.VARIABLES),$(if $(filter command line,$(origin $(v))),$(v))))
UNKNOWN_VARS := $(filter-out $(KNOWN_VARS),$(CMDLINE_VARS))
ifneq ($(UNKNOWN_VARS),)
$(error unknown variable $(UNKNOWN_VARS) on the command line (a typo?); known: $(KNOWN_VARS))
endif
# Variables given on the command line reach no nested make or test that did not ask for them (make would pass
# them on through MAKEFLAGS and the environment): only where the venv lives and what builds it travel on.
INHERITED_VARS := PYTHON VENV
MAKEOVERRIDES := $(filter $(addsuffix =%,$(INHERITED_VARS)),$(MAKEOVERRIDES))
unexport $(filter-out $(INHERITED_VARS),$(CMDLINE_VARS))

SPEC_DIR       := specs/miopen
ANNOTATIONS    := $(SPEC_DIR)/annotations.yaml
GENERATED      := generated
HEADER     ?=
PARSE_ARGS ?=
# the pinned release: the newest committed one (written by `make upgrade`)
PINNED := $(shell cat $(SPEC_DIR)/pinned 2>/dev/null)
ifeq ($(origin MIOPEN_VERSION),command line)
VERSION_ARG := --miopen-version $(MIOPEN_VERSION)
else
VERSION_ARG :=
ifneq ($(HEADER),)
# the release HEADER declares (its version.h), read when a recipe needs it
MIOPEN_VERSION = $(shell "$(PY)" -m miogen header-version "$(HEADER)" || echo "make: or pass MIOPEN_VERSION=X.Y.Z" >&2)
else
MIOPEN_VERSION := $(PINNED)
endif
endif

.PHONY: all venv versions lock specs generate api-changes docs docs-test examples check-generated abi-check audit upgrade test typecheck bench clean help real-miopen real-miopen-ocl real-miopen-debian FORCE

all: generate

help:
	@echo "make venv                .venv/ with exactly the pins of requirements.lock, miogen installed editable (every target does it first)"
	@echo "make generate            render generated/ from every specs/miopen/<release>.yaml (HEADER=... parses one first)"
	@echo "make all                 the same as make generate"
	@echo "make api-changes         rewrite docs/api-changes.md (the releases and their changes) alone"
	@echo "make docs                make api-changes, then build the documentation site (Sphinx) into $(SITE)/html"
	@echo "make docs-test           build the site and test it in headless Chromium (pages, search, links; apt-get install chromium)"
	@echo "make examples            run examples/ocl_*.py with the venv's python on the OpenCL libMIOpen of ../shared (unpacked once; PoCL)"
	@echo "make check-generated     fail when the committed generated/ or docs/api-changes.md differs from a fresh render"
	@echo "make typecheck           mypy --strict on codegen/ and on the assembled miopen package"
	@echo "make abi-check HEADER=.. layout probe + call-through stub against a real miopen.h"
	@echo "make upgrade HEADER=...  add a new release: parse, diff, gate, ABI check, pin, generate, test (phases timed; rolled back on failure)"
	@echo "make specs HEADER=...    parse a miopen.h into $(SPEC_DIR)/<version>.yaml"
	@echo "make audit SRC=...       compare the annotations with MIOpen's C++ implementation (docs/audit.md)"
	@echo "make test                the suite but its gpu tier (stub libraries of every release, the real libraries of ../shared) + mypy --strict"
	@echo "make versions            the pinned versions the venv runs (python, libyaml, every package)"
	@echo "make lock                refresh requirements.lock (newest allowed versions, hashed), rebuild the venv, run the suite"
	@echo "make bench               speed benchmarks: one interleaved run, a table with goals"
	@echo "make real-miopen         rebuild the real libMIOpen 2.17.0 the tests use (Debian, ~25 min; not part of make test)"
	@echo "make real-miopen-ocl     rebuild an OpenCL libMIOpen: 2.17.0, or 3.3.0 with --release 3.3.0 (PoCL numerics; 25-40 min, root)"
	@echo "make real-miopen-debian  build (or reuse) the cached Debian sid root with the real MIOpen 3.4.0 and 3.5.1 (~5 min)"
	@echo "make clean               remove the venv and the scratch folders"
	@echo "make help                this list"

# The editable install is strict (a link tree of the package files, which mypy follows; the default
# import hook hides `miopen` from mypy), so a package file added or removed means reinstalling.
PKG_FILES := $(sort $(wildcard codegen/*.py codegen/*/*.py codegen/templates/*.j2 codegen/templates/release/*.j2 runtime/*.py runtime/*/*.py \
	$(GENERATED)/*.py $(GENERATED)/*.pyi $(GENERATED)/*/*.py $(GENERATED)/*/*.pyi \
	specs/*/target.yaml specs/*/annotations.yaml specs/*/shims/*/*.h))

$(subst $(space),\ ,$(VENV))/.pkg-files: FORCE
	@mkdir -p "$(VENV)"
	@echo '$(PKG_FILES)' | cmp -s - "$@" || echo '$(PKG_FILES)' > "$@"

# The venv holds exactly the pins of requirements.lock (hashes checked; `make lock` refreshes them), then
# miogen itself, editable and built with the pinned setuptools (no build isolation: nothing unpinned).
$(STAMP): pyproject.toml $(LOCK) $(subst $(space),\ ,$(VENV))/.pkg-files
	@echo "venv: $(VENV) (the pins of $(LOCK); miogen installed editable)"
	@test -x "$(PY)" || $(PYTHON) -m venv "$(VENV)"
	@$(PIP) install --require-hashes --no-deps -r $(LOCK) > "$(VENV)/install.log" 2>&1 || { cat "$(VENV)/install.log"; exit 1; }
	@$(PIP) install --no-deps --no-build-isolation -e . --config-settings editable_mode=strict >> "$(VENV)/install.log" 2>&1 || { cat "$(VENV)/install.log"; exit 1; }
	@"$(PY)" -m pip check >> "$(VENV)/install.log" 2>&1 || { cat "$(VENV)/install.log"; echo "venv: $(LOCK) is not consistent (make lock)"; exit 1; }
	@touch "$@"

# setup.py lists the packages (one per release directory of generated/)
$(STAMP): setup.py
# and compiles the templates into the link tree (a template edited since is compiled where a render uses it,
# and kept in the per-user cache; reinstalling puts it among the shipped ones again)
$(STAMP): $(filter %.j2,$(PKG_FILES))

venv: $(STAMP)

# The versions the venv runs (CI prints them before the tests).
versions: $(STAMP)
	@"$(PY)" -c 'import sys, yaml; print("python", sys.version.split()[0], "| libyaml", yaml._yaml.get_version_string() if yaml.__with_libyaml__ else "none")'
	@"$(PY)" -m pip list --format=freeze --exclude-editable | tr '\n' ' '; echo

# Refresh the pins deliberately: resolve the newest versions pyproject.toml allows (plus pip) into
# $(LOCK) with every file's hash, rebuild the venv from them and run the whole suite. Review the diff.
lock:
	@rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	@.lock-venv/bin/python -m pip --disable-pip-version-check -qq install $(PIP_TOOLS)
	@echo pip | CUSTOM_COMPILE_COMMAND="make lock" .lock-venv/bin/pip-compile $(LOCK_ARGS) --upgrade --output-file $(LOCK) pyproject.toml -
	@rm -rf .lock-venv
	@$(MAKE) --no-print-directory versions test


specs: $(STAMP)
	@test -n "$(HEADER)" || { echo "usage: make specs HEADER=path/to/miopen.h [MIOPEN_VERSION=X.Y.Z] [PARSE_ARGS=...]"; exit 2; }
	@"$(PY)" -m miogen parse "$(HEADER)" --beta $(VERSION_ARG) $(PARSE_ARGS) -o "$(SPEC_DIR)/"

generate: $(STAMP)
ifneq ($(HEADER),)
	@"$(PY)" -m miogen parse "$(HEADER)" --beta $(VERSION_ARG) $(PARSE_ARGS) -o "$(SPEC_DIR)/"
endif
	@"$(PY)" -m miogen check "$(SPEC_DIR)"/*.*.*.yaml --annotations "$(ANNOTATIONS)" --summary
	@test -f "$(SPEC_DIR)/$(MIOPEN_VERSION).yaml" || { echo "MIOPEN_VERSION=$(MIOPEN_VERSION): no committed spec $(SPEC_DIR)/$(MIOPEN_VERSION).yaml"; exit 2; }
	@"$(PY)" -m miogen render "$(SPEC_DIR)"/*.*.*.yaml --annotations "$(ANNOTATIONS)" --history "$(SPEC_DIR)" -o "$(GENERATED)"
	@"$(PY)" -m miogen changes "$(SPEC_DIR)"/*.*.*.yaml -o docs/api-changes.md

api-changes: $(STAMP)
	@"$(PY)" -m miogen changes "$(SPEC_DIR)"/*.*.*.yaml -o docs/api-changes.md

# The documentation site (docs/site/: the user's guide, the API reference, the coverage pages), built with the
# pinned Sphinx into $(SITE)/html (git-ignored); docs-test builds it again and drives it in headless Chromium.
SITE := build/docs
docs: api-changes
	@"$(PY)" docs/site/build.py --out "$(SITE)"

docs-test: $(STAMP)
	MIOGEN_REQUIRE_BROWSER=1 "$(PY)" -m pytest tests/codegen/test_docs_site.py -q

# The examples as a user runs them: the venv's interpreter, MIOPEN_LIBRARY naming the OpenCL build of
# ../shared/real-miopen-ocl (unpacked into ~/.cache/miogen, checked by its sha256), PoCL as the device.
examples: $(STAMP)
	@"$(PY)" scripts/run_examples.py

# `make audit SRC=/tmp/miopen-src [MIOPEN_VERSION=3.3.0] [AUDIT_ARGS="-o docs/semantics-audit.md"]`:
# what MIOpen's implementation does with each pointer parameter vs the annotations (docs/audit.md).
SRC        ?=
AUDIT_ARGS ?=
audit: $(STAMP)
	@test -n "$(SRC)" || { echo "usage: make audit SRC=path/to/MIOpen-source-root [MIOPEN_VERSION=X.Y.Z] [AUDIT_ARGS=...]"; exit 2; }
	"$(PY)" -m miogen audit "$(SRC)" --spec "$(SPEC_DIR)/$(MIOPEN_VERSION).yaml" --annotations "$(ANNOTATIONS)" $(AUDIT_ARGS)

# `make upgrade HEADER=/opt/rocm/include/miopen/miopen.h`: parse -> diff against the pinned (newest)
# release -> annotation gate on every release -> add and pin the new spec -> generate -> bring the
# editable install up to date (the new release's sub-package) -> test (UPGRADE_TEST, default make test).
# Transactional: if a step fails or the run is interrupted (SIGINT, SIGTERM, SIGHUP), the new spec, the
# pin, generated/ and the docs are put back as they were. (`$$(cat pinned)` is read by the shell once the
# new release is pinned; the test command reaches miogen through the environment, unquoted by make.)
UPGRADE_TEST ?= $(MAKE) --no-print-directory test
upgrade: export MIOGEN_UPGRADE_TEST = $(UPGRADE_TEST)
upgrade: $(STAMP)
	@test -n "$(HEADER)" || { echo "usage: make upgrade HEADER=path/to/miopen.h [MIOPEN_VERSION=X.Y.Z] [PARSE_ARGS='-I DIR'] [UPGRADE_TEST='CMD']"; exit 2; }
	@"$(PY)" -m miogen upgrade "$(HEADER)" $(VERSION_ARG) $(PARSE_ARGS) $(UPGRADE_ARGS) --specs "$(SPEC_DIR)" \
		--restore "$(GENERATED)" --restore docs/api-changes.md \
		--step render '$(MAKE) --no-print-directory generate' \
		--step venv '$(MAKE) --no-print-directory venv' \
		--step tests "$$MIOGEN_UPGRADE_TEST"

# CI: the committed generated/ must be exactly what `make generate` renders.
check-generated: $(STAMP)
	@rm -rf .check-generated
	@"$(PY)" -m miogen render "$(SPEC_DIR)"/*.*.*.yaml --annotations "$(ANNOTATIONS)" --history "$(SPEC_DIR)" -o .check-generated 2>/dev/null
	@diff -r -x __pycache__ -x .miogen-output "$(GENERATED)" .check-generated || { echo "generated/ is stale: run make generate and commit"; exit 1; }
	@"$(PY)" -m miogen changes "$(SPEC_DIR)"/*.*.*.yaml -o .check-generated/api-changes.md 2>/dev/null
	@diff docs/api-changes.md .check-generated/api-changes.md || { echo "docs/api-changes.md is stale: run make generate and commit"; exit 1; }
	@rm -rf .check-generated
	@echo "check-generated: $(GENERATED)/ and docs/api-changes.md are what the specs render"

abi-check: $(STAMP)
	@test -n "$(HEADER)" || { echo "usage: make abi-check HEADER=path/to/miopen.h [MIOPEN_VERSION=X.Y.Z] [PARSE_ARGS=...]"; exit 2; }
	@"$(PY)" -m miogen abi-check "$(HEADER)" $(VERSION_ARG) $(PARSE_ARGS)

# mypy --strict on codegen/ as the installed package `miogen` (a link in .typecheck/gen; codegen/support/ is
# excluded by pyproject.toml and checked where it runs), and on runtime/ + generated/ assembled as the
# installed `miopen` package (twice: everything with the .pyi stubs, and the generated implementation of
# every release without them).
PY_FROM_SUBDIR = $(if $(filter /%,$(firstword $(VENV))),,../../)$(PY)
typecheck: $(STAMP)
	@rm -rf .typecheck && mkdir -p .typecheck/gen .typecheck/stubs/miopen .typecheck/impl/miopen
	@ln -s "$(CURDIR)/codegen" .typecheck/gen/miogen
	@cd .typecheck/gen && MYPYPATH=. "$(PY_FROM_SUBDIR)" -m mypy --strict --config-file "$(CURDIR)/pyproject.toml" --cache-dir "$(CURDIR)/.mypy_cache" -p miogen
	@cp -r runtime/. .typecheck/stubs/miopen/ && cp -r "$(GENERATED)" .typecheck/stubs/miopen/_generated
	@cp -r runtime/. .typecheck/impl/miopen/ && cp -r "$(GENERATED)" .typecheck/impl/miopen/_generated
	@rm -f .typecheck/impl/miopen/_generated/*.pyi
	@cp tests/fixtures/miopen_usage.py .typecheck/stubs/
	@cd .typecheck/stubs && MYPYPATH=. "$(PY_FROM_SUBDIR)" -m mypy --strict --no-incremental miopen miopen_usage.py
	@cd .typecheck/impl && MYPYPATH=. "$(PY_FROM_SUBDIR)" -m mypy --strict --no-incremental --follow-imports=silent -p miopen._generated
	@rm -rf .typecheck

# mypy (make typecheck), the whole suite with the runtime against MIOPEN_VERSION's stub (pytest-xdist: one worker
# per core) and the runtime suite against every other release, side by side (scripts/test_all.sh)
# (each phase prints its name: "== phase: ...")
test: $(STAMP)
	@echo "== phase: versions"
	@$(MAKE) --no-print-directory versions
	@echo "== phase: check-generated"
	@$(MAKE) --no-print-directory check-generated
	@bash scripts/test_all.sh "$(PY)" $(MIOPEN_VERSION)

# one interleaved run of every benchmark, printed as a table (goal, measured, PASS/MISS);
# HEADER=/path/to/3.3.0/miopen.h adds the real-header parse ratio
bench: $(STAMP)
	@"$(PY)" benchmarks/run_all.py $(if $(HEADER),--header "$(HEADER)") $(if $(filter command line,$(origin MIOPEN_VERSION)),--version $(MIOPEN_VERSION)) $(BENCH_ARGS)

# The real libMIOpen 2.17.0 (HIPNOGPU) of ../shared/real-miopen, rebuilt from source on Debian bookworm:
# `make real-miopen REAL_MIOPEN_ARGS="--source ~/src/MIOpen --out /tmp/real-miopen --pack"` (see the script's --help).
REAL_MIOPEN_ARGS ?=
real-miopen:
	bash scripts/build_real_miopen.sh $(REAL_MIOPEN_ARGS)

# A real libMIOpen with MIOpen's OpenCL backend, from the recipe of ../shared/real-miopen-ocl (2.17.0) or, with
# --release 3.3.0, ../shared/real-miopen-ocl-330, plus scripts/real-miopen-ocl-patches/<release>/ (see its --help):
# `make real-miopen-ocl REAL_MIOPEN_OCL_ARGS="--release 3.3.0 --source ~/src/MIOpen.git --half ~/src/half.git"`
REAL_MIOPEN_OCL_ARGS ?=
real-miopen-ocl:
	bash scripts/build_real_miopen_ocl.sh $(REAL_MIOPEN_OCL_ARGS)

# The real Debian-built MIOpen 3.4.0 and 3.5.1 in a cached sid root (docs/real-miopen.md; needs root)
REAL_MIOPEN_DEBIAN_ARGS ?=
real-miopen-debian:
	bash scripts/real_miopen_debian.sh $(REAL_MIOPEN_DEBIAN_ARGS)

clean:
	rm -rf "$(VENV)" build .pytest_cache .mypy_cache .check-generated .typecheck .lock-venv
