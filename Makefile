# The README's two commands: `make demo` and `make test`. Both set up everything they need first.
SHELL := /bin/bash
PY := .venv/bin/python

.PHONY: setup demo test lint shaders bench

setup:
	@bash tools/setup.sh

demo: setup
	$(PY) -m vkmorph.app.cli demo $(ARGS)

test: setup
	$(PY) tools/compile_shaders.py --check
	.venv/bin/ruff check .
	VKMORPH_VALIDATION=1 $(PY) -m pytest -q $(PYTEST_ARGS)

lint: setup
	.venv/bin/ruff check .

shaders: setup
	$(PY) tools/compile_shaders.py

bench: setup
	$(PY) -m vkmorph.app.cli bench $(ARGS)
