# The README's two commands: `make demo` and `make test`. Both set up everything they need first.
#   make demo FILE="my models/robot.glb" ARGS="--frames 100"   (FILE may contain spaces; ARGS is split by the shell)
SHELL := /bin/bash
PY := .venv/bin/python

.PHONY: setup demo test test-fast lint shaders bench docs soak

setup:
	@bash tools/setup.sh

demo: setup
	$(PY) -m vkmorph demo $(if $(FILE),"$(FILE)") $(ARGS)

# The whole suite, one process (what CI runs). It prints how long it took: 9 min 54 s on a shared 2-core host
# with lavapipe (load average 4-5 from other jobs). Nothing in it depends on the machine's speed: waits are for
# events, with limits only as safety nets.
test: setup
	@start=$$(date +%s); \
	$(PY) tools/compile_shaders.py --check && .venv/bin/ruff check . && \
	VKMORPH_VALIDATION=1 $(PY) -m pytest -q $(PYTEST_ARGS); status=$$?; \
	echo "make test: $$(( ($$(date +%s) - start) / 60 )) min $$(( ($$(date +%s) - start) % 60 )) s, exit $$status"; \
	exit $$status

# For development: the same tests spread over every core (pytest-xdist; each test file stays in one worker, so
# a file's fixtures and subprocesses are not shared across workers). Not a substitute for `make test`.
test-fast: setup
	@start=$$(date +%s); \
	VKMORPH_VALIDATION=1 $(PY) -m pytest -q -n auto --dist loadfile $(PYTEST_ARGS); status=$$?; \
	echo "make test-fast: $$(( ($$(date +%s) - start) / 60 )) min $$(( ($$(date +%s) - start) % 60 )) s, exit $$status"; \
	exit $$status

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
