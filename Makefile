# mcd developer targets. Run `bash scripts/setup.sh` first (the README's commands do).
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo lint test unit bench format

demo:
	$(BIN)/mcd plan examples/rendered-worker-1.yaml examples/rendered-worker-2.yaml
	$(BIN)/mcd plan examples/rendered-worker-1.yaml examples/rendered-worker-2.yaml \
		--policy examples/machineconfiguration.yaml --json

lint:
	$(BIN)/ruff check mcd tests bench
	$(BIN)/ruff format --check mcd tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

unit:
	$(BIN)/pytest

bench:
	$(BIN)/python -m bench.report

test: lint unit bench

format:
	$(BIN)/ruff format mcd tests bench
	$(BIN)/ruff check --fix mcd tests bench
