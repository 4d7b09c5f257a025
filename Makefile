# tokend: make run (the daemon on this folder), make test (everything CI runs), make bench, make lint.
VENV := .venv
BIN := $(VENV)/bin

.PHONY: bootstrap run lsp test lint bench

bootstrap:
	@scripts/bootstrap

run: bootstrap
	@$(BIN)/tokend serve --idle-timeout 0

lsp: bootstrap
	@$(BIN)/tokend lsp

test: bootstrap
	$(BIN)/python -m pytest -q -p no:cacheprovider

lint: bootstrap
	$(BIN)/ruff check server tests bench
	$(BIN)/ruff format --check server tests bench
	$(BIN)/lint-imports --config pyproject.toml
	$(BIN)/mypy

bench: bootstrap
	$(BIN)/python -m bench.run
