# Olaf — make help lists the targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.olaf-installed
# Defined before any rule uses it (prerequisites are expanded when a rule is read).
MININET_PY ?= /usr/lib/python3/dist-packages/mininet
MININET_LINK := $(VENV)/.mininet-linked
EXTRAS ?= test,p4,verify,rtl,lint,ns3,experiments,ray

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | \
	  awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}'

# Under sudo, files the build creates are handed back to the invoking user.
GIVE_BACK = if [ -n "$$SUDO_UID" ] && [ "$$(id -u)" = 0 ]; then chown -R "$$SUDO_UID:$$SUDO_GID" $(1); fi

$(STAMP): pyproject.toml
	@scripts/check-system-deps.sh python rtl
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[$(EXTRAS)]'
	@touch $@
	@$(call GIVE_BACK,$(VENV) *.egg-info)

.PHONY: setup
setup: $(STAMP) ## Create .venv and install Olaf with what the tests need

# The train extra (torch, Gymnasium[box2d], Stable-Baselines3) for `olaf worker --task ppo`, and the
# rllib extra (ray[rllib], pinned) for its RLlib learner (`--learner rllib`, OlafPPO: docs/rllib.md).
# torch first, pinned, so that pip takes a CPU-only wheel: TORCH_INDEX=https://download.pytorch.org/whl/cpu
# where the default index would bring the CUDA build (docs/training.md).
TORCH_INDEX ?=
TRAIN_STAMP := $(VENV)/.olaf-train-installed
TRAIN_EXTRAS ?= train,rllib
$(TRAIN_STAMP): $(STAMP)
	$(PY) -m pip install -q torch==2.13.0 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(PY) -m pip install -q -e '.[$(TRAIN_EXTRAS)]'
	@touch $@
	@$(call GIVE_BACK,$(VENV))

.PHONY: train-deps
train-deps: $(TRAIN_STAMP) ## Install the train and rllib extras (torch CPU, Gymnasium with Box2D, Stable-Baselines3, RLlib)

.PHONY: test
test: $(STAMP) $(TRAIN_STAMP) $(MININET_LINK) ## Every test tier this machine can run (installs what is missing first); says which it skipped and why
	$(PY) -m pytest

# The Mininet, training and Ray tiers (Ray's tests are marked mininet and train) beside LOAD
# CPU-bound processes that the session starts and stops itself (tests/conftest.py, --competing-load):
# nothing may pass only on an idle machine (docs/reliability.md "Under load").
LOAD ?= 2
.PHONY: test-under-load
test-under-load: $(STAMP) $(TRAIN_STAMP) $(MININET_LINK) ## The Mininet, training and Ray tiers beside LOAD (2) CPU-bound processes
	$(PY) -m pytest -m "mininet or train" --competing-load $(LOAD)

# The tiers (pytest markers, pyproject.toml; tests/tiers.py): test-quick leaves out all of them.
QUICK_MARKERS := not p4 and not mininet and not ns3 and not rtl and not train and not slow
.PHONY: test-quick
test-quick: $(STAMP) ## The pure-Python tiers only (no P4 toolchain, Mininet, ns-3, RTL, training or slow tests)
	$(PY) -m pytest -m "$(QUICK_MARKERS)"

.PHONY: test-install
test-install: $(STAMP) ## The base install into a fresh venv from the package index: olaf.client, the integrations, olaf launch
	OLAF_INSTALL_TEST=1 $(PY) -m pytest tests/test_packaging.py -k fresh_venv

.PHONY: vectors
vectors: $(STAMP) ## Regenerate tests/vectors from the reference model
	$(VENV)/bin/olaf vectors generate --out tests/vectors
	$(VENV)/bin/olaf vectors check tests/vectors

.PHONY: generate
generate: $(STAMP) ## Regenerate constants.p4, olaf_constants.hpp and docs/schemas from their Python sources
	$(VENV)/bin/olaf codegen generate

# --- Static checks -------------------------------------------------------------
# clang-format: every hand-written C++ file of p4src/extern (olaf_constants.hpp is generated and drift-checked)
CPP_LINT := $(filter-out p4src/extern/olaf_constants.hpp,$(wildcard p4src/extern/*.cpp p4src/extern/*.hpp))
# the simulation's C++ (olaf/sim/cpp) uses the same style file
SIM_CPP_LINT := $(wildcard olaf/sim/cpp/*.cpp olaf/sim/cpp/*.hpp)
# recursive (=): BUILD is set further down
TYPECHECK = $(BUILD)/typecheck

.PHONY: lint
lint: $(STAMP) $(TRAIN_STAMP) rtl-lint ## ruff, mypy, clang-format, generated-file drift, verilator lint
	$(VENV)/bin/ruff check .
	@# mypy sees the import package: olaf/ with controller/ and topologies/ mapped in (pyproject package-dir)
	@rm -rf $(TYPECHECK) && mkdir -p $(TYPECHECK) && cp -rs $(CURDIR)/olaf $(TYPECHECK)/olaf && \
	  ln -s $(CURDIR)/controller $(TYPECHECK)/olaf/controller && ln -s $(CURDIR)/topologies $(TYPECHECK)/olaf/topologies
	cd $(TYPECHECK) && $(CURDIR)/$(VENV)/bin/mypy --config-file $(CURDIR)/pyproject.toml -p olaf
	$(VENV)/bin/clang-format --dry-run -Werror $(CPP_LINT)
	$(VENV)/bin/clang-format --style=file:p4src/extern/.clang-format --dry-run -Werror $(SIM_CPP_LINT)
	$(VENV)/bin/olaf codegen check

# --- P4 data plane (p4src/) ---
BUILD ?= build
P4C ?= p4c-bm2-ss
P4FLAGS ?=
CXX ?= g++
CXXFLAGS ?= -std=c++17 -O2 -g -Wall -Wextra
# BMv2's headers: next to the installed simple_switch_grpc (p4lang packages: /usr/include).
BM_PREFIX ?= $(patsubst %/bin/simple_switch_grpc,%,$(realpath $(shell command -v simple_switch_grpc 2>/dev/null)))
BM_INCLUDE ?= $(if $(BM_PREFIX),$(BM_PREFIX)/include,/usr/include)
P4_SOURCES := p4src/olaf.p4 $(wildcard p4src/include/*.p4)
CORE_SOURCES := p4src/extern/olaf_queue_core.cpp p4src/extern/olaf_queue_core.hpp p4src/extern/olaf_constants.hpp

$(BUILD)/test_queue_core: p4src/extern/test_queue_core.cpp $(CORE_SOURCES)
	@scripts/check-system-deps.sh cpp
	@mkdir -p $(BUILD)
	$(CXX) $(CXXFLAGS) -Werror -o $@ p4src/extern/test_queue_core.cpp p4src/extern/olaf_queue_core.cpp
	@$(call GIVE_BACK,$(BUILD))

.PHONY: core-test
core-test: $(BUILD)/test_queue_core ## Replay tests/vectors through the C++ queue core (no switch)
	$(BUILD)/test_queue_core tests/vectors/*.json

$(BUILD)/olaf_queue.so: p4src/extern/olaf_queue_bmv2.cpp $(CORE_SOURCES)
	@scripts/check-system-deps.sh p4
	@test -f $(BM_INCLUDE)/bm/bm_sim/extern.h || { echo "BMv2 headers not found under $(BM_INCLUDE) (set BM_INCLUDE=...)"; exit 1; }
	@mkdir -p $(BUILD)
	$(CXX) $(CXXFLAGS) -shared -fPIC -I$(BM_INCLUDE) -o $@ p4src/extern/olaf_queue_bmv2.cpp p4src/extern/olaf_queue_core.cpp

$(BUILD)/olaf.json: $(P4_SOURCES)
	@scripts/check-system-deps.sh p4
	@mkdir -p $(BUILD)
	$(P4C) --std p4-16 --target bmv2 --arch v1model --emit-externs $(P4FLAGS) \
	  --p4runtime-files $(BUILD)/olaf.p4info.txt -o $@ p4src/olaf.p4

.PHONY: build
build: $(BUILD)/olaf.json $(BUILD)/olaf_queue.so ## Compile the P4 program and the OlafQueue extern (needs p4c, BMv2)
	@$(call GIVE_BACK,$(BUILD))

.PHONY: ptf
ptf: $(STAMP) build ## Run the PTF data-plane tests against simple_switch_grpc (root)
	$(PY) -m olaf.ptf_runner --build $(BUILD) --test-dir ptf_tests

.PHONY: bench
bench: $(STAMP) ## Measure PS throughput against a raw UDP echo on loopback
	$(PY) bench/ps_throughput.py

.PHONY: bench-ps-chunks
bench-ps-chunks: $(STAMP) ## PS chunks/s for SB3's network (9,797 parameters) at K = 1, 5, 28 against a raw UDP echo, same run
	$(PY) bench/ps_throughput.py --chunked 9797 --updates 6000

.PHONY: bench-rl
bench-rl: $(TRAIN_STAMP) ## PPO task vs bandit: worker ms and PS us per update, same run
	nice $(PY) bench/rl_cost.py

.PHONY: bench-rl-train
bench-rl-train: $(TRAIN_STAMP) ## Default PPO job over loopback (9x3 workers, LunarLander-v3) until mean worker reward 0
	nice $(PY) bench/rl_train.py --out build/rl_train

.PHONY: bench-solve
SOLVE_SEEDS ?= 1,2,3
bench-solve: $(TRAIN_STAMP) ## Time to LunarLander "solved": SB3 PPO (1 and 2 cores), then Olaf's 27 workers (--net sb3, local), SOLVE_SEEDS, same session
	$(PY) bench/solve.py run --seeds $(SOLVE_SEEDS) --out build/solve

.PHONY: bench-ray
bench-ray: $(TRAIN_STAMP) build ## ray backend vs worker processes (root): time to target and PSS per process/actor/worker, same run
	$(PY) bench/ray_fleet.py --clusters 4 --workers-per-cluster 4 --workers-per-actor 4 --out build/ray-fleet

.PHONY: bench-rllib
bench-rllib: $(TRAIN_STAMP) ## RLlib's PPO vs the same PPO through Olaf (OlafPPO, PS over loopback): time and env steps to CartPole 150, same run
	$(PY) bench/rllib_olaf.py --env-runners 4 --target 150 --seeds $(SOLVE_SEEDS) --out build/rllib-olaf.json

.PHONY: bench-sim
bench-sim: $(STAMP) ## ns-3 backend: simulated packets per wall second, Olaf vs FIFO QueueDisc (same run)
	nice $(PY) bench/sim_speed.py

.PHONY: bench-sim-scale
bench-sim-scale: $(STAMP) ## ns-3 backend: Fig. 9 shape, 10/100/1000 clusters x 10 workers, 60 s simulated (wall and CPU time, peak RSS)
	nice $(PY) bench/sim_scale.py

.PHONY: bench-sim-identity
bench-sim-identity: $(STAMP) ## ns-3 backend: digests of every committed spec's runs (first seed per point) -> build/sim-identity.json; compare two with bench/sim_identity.py compare
	nice $(PY) bench/sim_identity.py record build/sim-identity.json
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

# --- Mininet end to end (topologies/) ---
DURATION ?= 30
QUEUE ?= olaf
TOPO ?= tor
RUN_ARGS ?=

# Mininet's Python package comes with the distribution's mininet package; link it into the venv.
# Optional for `make test` (the Mininet tests then skip and say why); `olaf run` checks it.
$(MININET_LINK): $(STAMP)
	@if MININET_PY=$(MININET_PY) scripts/check-system-deps.sh mininet; then \
	  ln -sfn $(MININET_PY) "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/mininet" && touch $@; \
	else echo "note: without Mininet, the end-to-end tests skip and make run cannot start"; fi

.PHONY: run
run: $(STAMP) build $(MININET_LINK) ## Olaf end to end in Mininet (root): DURATION=s (0: CLI) QUEUE=olaf|fifo TOPO=tor|multihop
	$(VENV)/bin/olaf run --topo $(TOPO) --queue $(QUEUE) --duration $(DURATION) $(RUN_ARGS)

.PHONY: compare
compare: $(STAMP) build $(MININET_LINK) ## Olaf and FIFO back to back on the same topology and load (root)
	$(VENV)/bin/olaf compare --topo $(TOPO) --duration $(DURATION) $(RUN_ARGS)

# --- Training (olaf train; docs/training.md) -------------------------------------
TRAIN_ARGS ?=
FIG ?= fig8
FIG_ARGS ?=
.PHONY: train
train: $(TRAIN_STAMP) build $(MININET_LINK) ## Default PPO job (9x3 workers, LunarLander-v3, no bottleneck) through Mininet + BMv2 until mean worker reward 0 (root); TRAIN_ARGS=...
	$(VENV)/bin/olaf train $(TRAIN_ARGS)

.PHONY: train-figure
train-figure: $(TRAIN_STAMP) build $(MININET_LINK) ## A paper training figure (root): FIG=fig8|fig7|fig2|fig3, TRAIN_ARGS (base job), FIG_ARGS (e.g. --seeds 3 --quick)
	$(VENV)/bin/olaf train $(TRAIN_ARGS) compare $(FIG) $(FIG_ARGS)
# --- RTL (verilog_queue/) ---------------------------------------------------
RTL_SRC := $(sort $(wildcard verilog_queue/rtl/*.v))
VERILATOR := $(VENV)/bin/verilator-cli
# parameter sets linted: the paper's queue, jumbo segments, the smallest queue, 3 segments / 16 clusters,
# chunk keys (224 segments, 16 clusters x 28 chunks; 5 segments, 3 clusters x 5 chunks)
RTL_LINT_PARAMS := "" "-GBEATS_PER_SEGMENT=142" "-GSEGMENTS=1 -GNUM_CLUSTERS=1 -GBEATS_PER_SEGMENT=2" \
  "-GSEGMENTS=3 -GNUM_CLUSTERS=16" "-GSEGMENTS=224 -GNUM_CLUSTERS=16 -GMAX_CHUNKS=28" \
  "-GSEGMENTS=5 -GNUM_CLUSTERS=3 -GMAX_CHUNKS=5"

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
rtl-synth: $(STAMP) ## RTL: Yosys synth_xilinx (UltraScale+) area of the paper's, the jumbo and a chunked configuration
	$(PY) verilog_queue/synth/area.py
# --- end RTL ------------------------------------------------------------------

.PHONY: clean
clean: ## Remove build outputs (keeps .venv)
	rm -rf build .pytest_cache .hypothesis verilog_queue/sim_build verilog_queue/synth_build

.PHONY: distclean
distclean: clean ## Remove build outputs and .venv
	rm -rf $(VENV)

.PHONY: bench-switch
bench-switch: $(STAMP) build ## Switch throughput (root): Olaf paths vs plain IPv4 on simple_switch_grpc -> docs/performance.md table
	$(PY) bench/switch_throughput.py --out build/switch-throughput.md

.PHONY: fuzz
fuzz: $(STAMP) build ## Data-plane fuzzing on BMv2 (root): 100,000 frames, checks after every batch -> build/fuzz.json
	$(PY) -m olaf.dpfuzz --frames $${FRAMES:-100000} --out build/fuzz.json

# --- Queue-core fuzzing and token-loss regression (p4src/extern; docs/vectors.md "Fuzzing") ---
# libFuzzer harness under ASan/UBSan (Debian: apt-get install --no-install-recommends clang
# libclang-rt-14-dev); the trace program and the token-loss test build with $(CXX).
FUZZ_SECONDS ?= 60
FUZZ_CXX ?= clang++
SAN_FLAGS := -std=c++17 -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -Wall -Wextra
FUZZ_SOURCES := p4src/extern/fuzz_queue_core.cpp p4src/extern/queue_vectors.hpp $(CORE_SOURCES)
FUZZ_DIR := $(BUILD)/fuzz

$(BUILD)/test_queue_core: p4src/extern/queue_vectors.hpp

# Coverage instrumentation on the core only: the harness's JSON code would otherwise steer
# the fuzzer and slow it down (sanitizers stay on everywhere).
$(BUILD)/fuzz_queue_core: $(FUZZ_SOURCES)
	@command -v $(FUZZ_CXX) >/dev/null || { echo "$(FUZZ_CXX) not found: apt-get install --no-install-recommends clang libclang-rt-14-dev"; exit 1; }
	@mkdir -p $(BUILD)
	$(FUZZ_CXX) $(SAN_FLAGS) -fsanitize=fuzzer-no-link -c -o $(BUILD)/fuzz_core.o p4src/extern/olaf_queue_core.cpp
	$(FUZZ_CXX) $(SAN_FLAGS) -c -o $(BUILD)/fuzz_harness.o p4src/extern/fuzz_queue_core.cpp
	$(FUZZ_CXX) $(SAN_FLAGS) -fsanitize=fuzzer -o $@ $(BUILD)/fuzz_harness.o $(BUILD)/fuzz_core.o
	@$(call GIVE_BACK,$(BUILD))

$(BUILD)/fuzz_queue_trace: $(FUZZ_SOURCES)
	@scripts/check-system-deps.sh cpp
	@mkdir -p $(BUILD)
	$(CXX) $(SAN_FLAGS) -Werror -DOLAF_FUZZ_TRACE_MAIN -o $@ p4src/extern/fuzz_queue_core.cpp p4src/extern/olaf_queue_core.cpp
	@$(call GIVE_BACK,$(BUILD))

.PHONY: fuzz-core
fuzz-core: $(STAMP) $(BUILD)/fuzz_queue_core $(BUILD)/fuzz_queue_trace ## Fuzz the queue core (ASan/UBSan) for FUZZ_SECONDS, then C++ vs model on the corpus; findings -> tests/vectors/fuzz_*.json
	@mkdir -p $(FUZZ_DIR)/corpus $(FUZZ_DIR)/artifacts
	@cp -n tests/fuzz/corpus/* $(FUZZ_DIR)/corpus/
	@rc=0; nice $(BUILD)/fuzz_queue_core -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -print_final_stats=1 \
	  -artifact_prefix=$(FUZZ_DIR)/artifacts/ $(FUZZ_DIR)/corpus || rc=$$?; \
	$(VENV)/bin/olaf vectors differential --tool $(BUILD)/fuzz_queue_trace --found-dir tests/vectors \
	  $(FUZZ_DIR)/corpus $(FUZZ_DIR)/artifacts || rc=1; \
	$(call GIVE_BACK,$(FUZZ_DIR) tests/vectors); exit $$rc

.PHONY: fuzz-core-merge
fuzz-core-merge: $(BUILD)/fuzz_queue_core ## Minimise the fuzz corpus (build/fuzz/corpus) into the committed tests/fuzz/corpus
	$(BUILD)/fuzz_queue_core -merge=1 -max_len=4096 tests/fuzz/corpus $(FUZZ_DIR)/corpus

$(BUILD)/test_token_loss: p4src/extern/test_token_loss.cpp $(CORE_SOURCES)
	@scripts/check-system-deps.sh cpp
	@mkdir -p $(BUILD)
	$(CXX) $(CXXFLAGS) -Werror -o $@ p4src/extern/test_token_loss.cpp p4src/extern/olaf_queue_core.cpp
	@$(call GIVE_BACK,$(BUILD))

.PHONY: token-loss
token-loss: $(BUILD)/test_token_loss ## C++ core under 0.1 % token loss, ~10,000 updates: with the ledger and with the old head-popping egress
	$(BUILD)/test_token_loss --mode ledger
	$(BUILD)/test_token_loss --mode legacy
# --- end queue-core fuzzing ---

# --- Experiments (olaf/experiments, experiments/*.yaml) ------------------------
EXPERIMENT_SPECS := $(sort $(wildcard experiments/*.yaml))
REPRO_BACKEND ?= ns3
REPRO_OUT ?= $(if $(filter ns3,$(REPRO_BACKEND)),results/paper,results/paper-$(REPRO_BACKEND))
REPRO_DOC ?= $(if $(filter ns3,$(REPRO_BACKEND)),docs/reproduction.md,docs/reproduction-$(REPRO_BACKEND).md)
REPRO_ARGS ?=

.PHONY: reproduce
reproduce: $(STAMP) ## Every experiments/*.yaml on REPRO_BACKEND=ns3|mininet into results/paper/, tables in docs/reproduction.md
	@if [ "$(REPRO_BACKEND)" = mininet ]; then $(MAKE) -s build $(MININET_LINK); fi
	@rc=0; for f in $(EXPERIMENT_SPECS); do \
	  n=$$(basename $$f .yaml); echo "== $$f"; \
	  nice $(VENV)/bin/olaf experiment $$f --backend $(REPRO_BACKEND) --out $(REPRO_OUT)/$$n $(REPRO_ARGS) || rc=1; \
	done; \
	$(PY) -m olaf.experiments.reproduction $(REPRO_OUT) $(REPRO_DOC) && $(call GIVE_BACK,results $(basename $(REPRO_DOC))*); \
	exit $$rc
