# Every target sets up what it needs; on a fresh machine only Python 3.11 and pip are required.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PORT ?= 8888
export PATH := $(abspath $(BIN)):$(PATH)
ASSIGNMENTS := $(notdir $(wildcard source/[0-9]*))
# pip install with up to three tries: a registry's dropped connection (IncompleteRead) fails one
# download, not the set-up; a real error (a missing version) fails all three and stops make.
PIP_INSTALL = for try in 1 2 3; do $(1) -m pip install --quiet $(2) && break; \
  [ $$try = 3 ] && exit 1; echo "pip install failed (try $$try of 3); trying again in 10 s" >&2; sleep 10; done

.PHONY: help lab test test-fast check release sync strip venv learner-env hub hub-proxy clean bench-formulas bench bench-grade bench-merge bench-threads gpu-check train heads distill grade

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

lab: $(STAMP) ## set up, copy the course into workspace/ (never overwriting your changes), start JupyterLab
	@$(BIN)/python -m coursekit.lab workspace --port=$(PORT)

test: $(STAMP) ## set up and run the whole test suite (on up to 4 CPUs at once; tests/support/tiers.py says how)
	$(BIN)/python -m pytest -n auto --maxprocesses 4 --dist loadgroup --no-loadscope-reorder --durations=25

test-fast: $(STAMP) ## the inner loop (about 90 s on 2 cores): checkers, helpers, model, sync, leaks, 01 graded with stock nbgrader
	$(BIN)/python -m pytest -m "not slow" -n auto --maxprocesses 4 --dist loadgroup --no-loadscope-reorder

check: $(STAMP) ## grade your workspace with the hidden tests, notebook by notebook: points per exercise and hints (NB=01 or NB="01 02": only those)
	@$(BIN)/python -m coursekit.check workspace $(NB)

grade: $(STAMP) ## instructors: autograde every submission under submitted/, feedback, grades.csv, report (JOBS=N, SCHEDULER=tcp://HOST:8786, ARGS=...)
	$(BIN)/python -m coursekit.grade $(if $(JOBS),--jobs $(JOBS)) $(if $(SCHEDULER),--scheduler $(SCHEDULER)) $(ARGS)

bench: $(STAMP) ## time plain vs speculative decoding on the shipped pair, K = 0..8, T = 0 and 1
	$(BIN)/python benchmarks/speculative.py

gpu-check: $(STAMP) ## on a CUDA machine: notebooks 04-07 with the reference answers, the model/engine/checker tests on CUDA, make bench; one summary (exits 0 without CUDA)
	$(BIN)/python -m coursekit.gpucheck $(ARGS)

bench-grade: $(STAMP) ## grading before and after side by side (one learner), and a cohort on a two-worker loopback cluster
	$(BIN)/python benchmarks/grading.py

bench-merge: $(STAMP) ## recording graded learners in the course: one at a time vs in batches (1,000 synthetic learners of 01)
	$(BIN)/python benchmarks/merge.py

bench-threads: $(STAMP) ## torch threads and OpenMP's wait policy, quiet and with one core busy, side by side
	$(BIN)/python benchmarks/threads.py

bench-formulas: $(STAMP) ## time the vectorised formulas behind the explorer (1000 x 1000 grid)
	$(BIN)/python benchmarks/formula_speed.py

train: $(STAMP) ## retrain the shipped target/draft pair (seeded; minutes on a GPU, many hours on a CPU), then notebook 08's drafts
	$(BIN)/python -m specdec.train
	@$(MAKE) --no-print-directory distill

distill: $(STAMP) ## notebook 08's eight drafts: the shipped draft fine-tuned with each loss on corpus and on-policy data (seeded; about 16 minutes on 2 cores)
	$(BIN)/python -m solutions.distill $(ARGS)

heads: $(STAMP) ## retrain notebook 05's self-drafting heads on the shipped target (seeded; a few minutes on a CPU)
	$(BIN)/python -m specdec.heads

release: $(STAMP) ## regenerate course/ from source/ with nbgrader's generate_assignment (coursekit.batch generate, the course's one way)
	$(BIN)/python -m coursekit.batch generate $(ASSIGNMENTS)

sync: $(STAMP) strip ## regenerate everything derived from source/: solutions/reference/, the scan page and course/
	$(BIN)/python -m coursekit.reference
	$(BIN)/python -m coursekit.scanlist
	@$(MAKE) --no-print-directory release

strip: $(STAMP) ## remove outputs from the source notebooks
	$(BIN)/jupyter nbconvert --clear-output --inplace --log-level=WARN source/*/*.ipynb

learner-env: ## for a cohort: learner-env/, what learners need to run the notebooks and no answers (docs/instructors.md)
	test -x learner-env/bin/python || $(PYTHON) -m venv learner-env
	$(call PIP_INSTALL,learner-env/bin/python,-c requirements.txt ./learner)

HUB_PROXY := hub/node_modules/.bin/configurable-http-proxy

hub: $(STAMP) learner-env $(HUB_PROXY) ## a course server here: JupyterHub on 127.0.0.1:8000 (COURSE_HUB_PASSWORD=... required; docs/instructors.md, "A course server: JupyterHub")
	$(BIN)/jupyterhub -f hub/jupyterhub_config.py

hub-proxy: $(HUB_PROXY) ## JupyterHub's proxy, configurable-http-proxy from npm (pinned by hub/package-lock.json)

$(HUB_PROXY): hub/package.json hub/package-lock.json
	npm ci --prefix hub --no-audit --no-fund --loglevel=error
	touch $@

venv: $(STAMP) ## create .venv with the pinned dependencies (other targets do this when needed)

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(call PIP_INSTALL,$(BIN)/python,--upgrade pip)
	$(call PIP_INSTALL,$(BIN)/python,-r requirements.txt)
	$(call PIP_INSTALL,$(BIN)/python,--quiet --no-deps -e .)
	# jupyter-events asks for jsonschema[format-nongpl], which brings rfc3987-syntax; jsonschema imports it
	# when present and it builds a parser at import (1-2 s of every nbgrader, jupyter and grading process
	# here) for the "iri" format check, which nothing in the course uses: without it jsonschema skips that check.
	$(BIN)/python -m pip uninstall --quiet --yes rfc3987-syntax
	touch $@

clean: ## remove .venv and caches (keeps workspace/, your answers, and any grading data)
	rm -rf $(VENV) .pytest_cache
