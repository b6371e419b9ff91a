# Olaf — make help lists the targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.olaf-installed
EXTRAS ?= test,verify

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | \
	  awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@scripts/check-system-deps.sh python
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[$(EXTRAS)]'
	@touch $@

.PHONY: setup
setup: $(STAMP) ## Create .venv and install Olaf with what the tests need

.PHONY: test
test: $(STAMP) ## Run the test suite (installs what is missing first)
	$(PY) -m pytest

.PHONY: vectors
vectors: $(STAMP) ## Regenerate tests/vectors from the reference model
	$(VENV)/bin/olaf vectors generate --out tests/vectors
	$(VENV)/bin/olaf vectors check tests/vectors

# --- Verifier ---
# The AoM-fairness verifier (olaf/verifier, docs/verifier.md); needs the 'verify' extra.

.PHONY: verify-examples
verify-examples: $(STAMP) ## Run olaf verify on examples/verify-*.yaml (traces in results/verify/)
	@rc=0; for f in examples/verify-*.yaml; do \
	  echo "== $$f"; $(VENV)/bin/olaf verify "$$f"; c=$$?; \
	  if [ $$c -gt 1 ]; then rc=$$c; fi; \
	done; exit $$rc

.PHONY: bench-verify
bench-verify: $(STAMP) ## Verifier benchmark (time and verdict vs horizon, clusters) -> docs/verifier-bench.md
	$(PY) bench/verify_bench.py --out docs/verifier-bench.md

# --- end Verifier ---

.PHONY: clean
clean: ## Remove build outputs (keeps .venv)
	rm -rf build .pytest_cache .hypothesis

.PHONY: distclean
distclean: clean ## Remove build outputs and .venv
	rm -rf $(VENV)
