# Two commands for a fresh machine with Python >= 3.11:
#   make run    install into .venv, then run the default job (local Ray, scripted agents)
#   make test   install into .venv (with test extras), then run the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.masgrid-installed
export RAY_AUTH_MODE ?= disabled

.PHONY: run test install install-browser clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "masgrid needs Python >= 3.11: run PYTHON=python3.11 make ...")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	@$(MAKE) --no-print-directory install-browser
	touch $(STAMP)

# The report site's browser tests drive Debian's chromium through Playwright (no download).
install-browser:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ]; then apt-get install -y chromium; \
	else echo "site browser tests need /usr/bin/chromium: run 'sudo apt-get install -y chromium' (they are skipped without it)"; fi

install: $(STAMP)

run: $(STAMP)
	$(BIN)/masgrid run $(ARGS)

test: $(STAMP)
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) results
