# The two commands that matter: `make demo` and `make test`. Both set up a fresh machine first.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
export DAGSTER_HOME := $(CURDIR)
export PYTHONUNBUFFERED := 1

.PHONY: setup demo test ui lint clean

setup: $(VENV)/.hipforge-installed

$(VENV)/.hipforge-installed: pyproject.toml scripts/bootstrap.sh
	./scripts/bootstrap.sh

demo: setup
	$(BIN)/hipforge demo

# test files in TEST_WORKERS processes (a file's tests stay together: they share module fixtures)
TEST_WORKERS ?= 2
test: setup
	$(BIN)/python -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile

ui: setup
	mkdir -p warehouse/inbox  # the new_task_files sensor's folder
	$(BIN)/python scripts/dagster_dev.py -h 127.0.0.1 -p 3000  # dagster dev that stops on Ctrl-C and SIGTERM

lint: setup
	$(BIN)/ruff check hipforge hip_assets resources sensors tests

clean:
	rm -rf .dagster warehouse/*.duckdb warehouse/*.duckdb.wal
