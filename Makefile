# Front door: `make run` sets up and runs the negotiatord daemon on the bundled config and sample pool,
# `make test` sets up and runs the test suite (what CI runs).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup run dry-run test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	@echo "compiling the fast path's numba kernels once (cached on disk, ~40 s)"
	$(BIN)/negotiatord negotiate --config config/default.conf \
		--slots samples/slots.ads --jobs samples/jobs.ads > /dev/null
	touch $(STAMP)

setup: $(STAMP)

# The daemon on the bundled config and sample pool, in the foreground (Ctrl-C stops it); the
# one-cycle dry run is `negotiatord negotiate` (README, "Negotiating over your own pool").
run: $(STAMP)
	$(BIN)/negotiatord run --config config/default.conf \
		--preload-slots samples/slots.ads --preload-jobs samples/jobs.ads

# One cycle over the bundled config and sample pool, printed as a table.
dry-run: $(STAMP)
	$(BIN)/negotiatord negotiate --config config/default.conf \
		--slots samples/slots.ads --jobs samples/jobs.ads --format table

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	# two workers, each test file on one of them: most tests wait on daemons, pools and sockets
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

bench: $(STAMP)
	$(BIN)/python benchmarks/cycle_bench.py

clean:
	rm -rf $(VENV) build *.egg-info
