# Olaf — make help lists the targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.olaf-installed
EXTRAS ?= test,rtl

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

.PHONY: clean
clean: ## Remove build outputs (keeps .venv)
	rm -rf build .pytest_cache .hypothesis

.PHONY: distclean
distclean: clean ## Remove build outputs and .venv
	rm -rf $(VENV)
