# Two commands for a fresh machine with Python >= 3.11:
#   make run    install into .venv, then run the default job (local Ray, scripted agents)
#   make test   install into .venv (with test extras), then run the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.masgrid-installed
export RAY_AUTH_MODE ?= disabled

.PHONY: run test install install-browser clean sandbox-deps

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "masgrid needs Python >= 3.11: run PYTHON=python3.11 make ...")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
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

install: $(STAMP) sandbox-deps

run: $(STAMP)
	$(BIN)/masgrid run $(ARGS)

test: $(STAMP) sandbox-deps
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) results
