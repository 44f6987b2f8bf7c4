# The README's two commands: `make demo` and `make test`. Both set up everything they need first.
#   make demo FILE="my models/robot.glb" ARGS="--frames 100"   (FILE may contain spaces; ARGS is split by the shell)
SHELL := /bin/bash
PY := .venv/bin/python

.PHONY: setup demo test lint shaders bench docs soak

setup:
	@bash tools/setup.sh

demo: setup
	$(PY) -m vkmorph demo $(if $(FILE),"$(FILE)") $(ARGS)

test: setup
	$(PY) tools/compile_shaders.py --check
	.venv/bin/ruff check .
	VKMORPH_VALIDATION=1 $(PY) -m pytest -q $(PYTEST_ARGS)

lint: setup
	.venv/bin/ruff check .

shaders: setup
	$(PY) tools/compile_shaders.py

bench: setup
	$(PY) -m vkmorph bench $(ARGS)

# API reference from the docstrings (pdoc); warnings (broken cross-references) fail. The suite runs it too.
docs: setup
	$(PY) -m vkmorph.app.docs build/api

# Long soak: headless demo frames and runtime create/destroy cycles with an RSS growth bound (validation off).
soak: setup
	VKMORPH_VALIDATION=0 $(PY) -m vkmorph.app.soak $(ARGS)
