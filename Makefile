# tokend: make run (the daemon on this folder), make check (what CI runs: make lint, then make test),
# make lint (ruff, layer contracts, mypy strict), make test (the test suite), make bench.
VENV := .venv
BIN := $(VENV)/bin

.PHONY: bootstrap run lsp test lint check bench test-editors

bootstrap:
	@scripts/bootstrap

run: bootstrap
	@$(BIN)/tokend serve --idle-timeout 0

lsp: bootstrap
	@$(BIN)/tokend lsp

# Two workers (pytest-xdist) for all but the tests that bound a wait in wall time, which run alone
# afterwards (the `serial` marker, tests/conftest.py SERIAL). `pytest` alone runs everything in one process.
test: bootstrap
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 2 -m "not serial"
	$(BIN)/python -m pytest -q -p no:cacheprovider -m serial

lint: bootstrap
	$(BIN)/ruff check server tests bench
	$(BIN)/ruff format --check server tests bench
	$(BIN)/lint-imports --config pyproject.toml
	$(BIN)/mypy

# What CI runs (.ci/run): the lint, then the whole test suite.
check: lint test

bench: bootstrap
	$(BIN)/python -m bench.run

# Not in `make test`: installs ~800 MB (code-server, node 24, chromium) on its first run.
test-editors: bootstrap
	@scripts/test-editors
