# The README's two commands: `make demo` and `make test`. Each sets itself up.
PYTHON ?= python3
# CPython 3.13 (pyenv here) runs the suite a second time, subinterpreter tests included.
PY313 ?= $(shell p="$$(pyenv root 2>/dev/null)/versions/3.13.0/bin/python"; \
	if [ -x "$$p" ]; then echo "$$p"; else command -v python3.13 || true; fi)
VENV := .venv
VENV313 := .venv-3.13
# The demo's own venv: robotlab, its core dependencies and rich (the demo's live progress), not the dev extra.
VENV_DEMO := .venv-demo
DEMO_EXTRAS := rich
PYTEST_ARGS ?=

export LITELLM_LOCAL_MODEL_COST_MAP := True
# The tests fail, rather than skip, when the C fast path of freeze_deep was not built
# or redis-server (which the redis-server target below installs) is missing.
export ROBOTLAB_REQUIRE_ACCELERATOR := 1
export ROBOTLAB_REQUIRE_REDIS := 1
# Ray is in the dev extra of both venvs: its backend's tests must run, never skip.
export ROBOTLAB_REQUIRE_RAY := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# The test logs show progress as it happens (a hung test is then the one after the last mark).
export PYTHONUNBUFFERED := 1

.PHONY: demo test test-default test-3.13 lint bench clean redis-server

demo: $(VENV_DEMO)/.installed
	$(VENV_DEMO)/bin/robotlab demo

test: lint test-default test-3.13

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check src tests benchmarks examples

test-default: $(VENV)/.installed redis-server
	$(VENV)/bin/python -m pytest $(PYTEST_ARGS)

test-3.13: redis-server
ifeq ($(strip $(PY313)),)
	@echo "CPython 3.13 not found: subinterpreter suite not run on this machine"
else
	$(MAKE) $(VENV313)/.installed PYTHON_FOR_VENV="$(PY313)" VENV_DIR=$(VENV313)
	ROBOTLAB_REQUIRE_SUBINTERPRETERS=1 $(VENV313)/bin/python -m pytest $(PYTEST_ARGS)
endif

bench: $(VENV)/.installed
	$(VENV)/bin/python -m benchmarks

$(VENV_DEMO)/.installed: pyproject.toml src/robotlab/parallel/_freeze.c
	$(PYTHON) -m venv $(VENV_DEMO)
	$(VENV_DEMO)/bin/python -m pip install -q -e '.[$(DEMO_EXTRAS)]'
	touch $@

$(VENV)/.installed: pyproject.toml src/robotlab/parallel/_freeze.c
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q -e '.[dev]'
	touch $@

$(VENV313)/.installed: pyproject.toml src/robotlab/parallel/_freeze.c
	$(PYTHON_FOR_VENV) -m venv $(VENV_DIR)
	$(VENV_DIR)/bin/python -m pip install -q -e '.[dev]'
	touch $@

# The Redis memory tests start their own redis-server (tests/redis_server.py): install the
# Debian package when the binary is missing, and stop the system service it may start.
redis-server:
	@command -v redis-server >/dev/null 2>&1 || { \
	  command -v apt-get >/dev/null 2>&1 || { echo "redis-server is missing and there is no apt-get: install Redis to run the tests"; exit 1; }; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  echo "installing redis-server (Debian package) for the Redis memory tests"; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends redis-server; \
	  $$SUDO systemctl disable --now redis-server >/dev/null 2>&1 || $$SUDO service redis-server stop >/dev/null 2>&1 || true; }

clean:
	rm -rf $(VENV) $(VENV313) $(VENV_DEMO) build dist .pytest_cache .ruff_cache
