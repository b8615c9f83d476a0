# mcd developer targets. Run `bash scripts/setup.sh` first (the README's commands do).
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo lint test unit bench format

demo:
	rm -rf build/demo-root
	$(BIN)/mcd once-from examples/rendered-worker-1.yaml --root build/demo-root --skip-reboot
	$(BIN)/mcd validate examples/rendered-worker-1.yaml --root build/demo-root
	$(BIN)/mcd plan examples/rendered-worker-1.yaml examples/rendered-worker-2.yaml

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
