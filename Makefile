# The two commands of the README: `make run` (serve the agent) and `make test`.
# Both create the virtual environment and install everything they need on first use.
VENV ?= .venv
PYTHON ?= python3
PORT ?= 2024
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

export LANGGRAPH_CLI_NO_ANALYTICS := 1
export LANGGRAPH_NO_VERSION_CHECK := true
export LANGSMITH_TRACING := false

.PHONY: run test lint install browser

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[local,serve,dev,postgres,compose,bench]'
	@touch $(STAMP)

# LangGraph's JS SDK, as a chat UI streams a run, for the server tests (npm registry).
tests/js/node_modules: tests/js/package.json tests/js/package-lock.json
	@command -v npm >/dev/null && npm ci --prefix tests/js --no-audit --no-fund --silent || \
	  echo "no npm: the JS SDK streaming test will fail (apt-get install nodejs npm)"

install: $(STAMP)

run: $(STAMP)
	$(BIN)/langgraph-memgpt serve --port $(PORT)

# The memory page's browser tests drive Debian's Chromium through Playwright (Playwright's
# own browser download needs the internet): installed here when missing and we are root.
browser:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || \
	  { test "$$(id -u)" = 0 && apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
	  echo "no chromium: the memory page's browser tests will fail (apt-get install chromium)"

# Two worker processes, a test file each at a time (a file's module fixtures stay in one
# process); the slowest tests are listed at the end. TEST_WORKERS=0 runs in one process.
TEST_WORKERS ?= 2
test: $(STAMP) browser tests/js/node_modules
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=15

lint: $(STAMP)
	$(BIN)/ruff check langgraph_memgpt tests benchmarks examples
	$(BIN)/ruff format --check langgraph_memgpt tests benchmarks examples
	$(BIN)/mypy --strict langgraph_memgpt benchmarks/bench
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir $(VENV)/site
