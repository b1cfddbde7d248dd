# README's commands. Each target sets up .venv from the pinned requirements when needed.
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SITE := _build/html

.PHONY: book test lab clean bench student grade deck autograder

$(STAMP): requirements.txt lib/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements.txt
	touch $(STAMP)

# STUDENT=1 builds a class site without solutions into _build/html-student: the problem sets are
# read as their student editions (chalk.teaching.class_site); after `make book` only they are
# read and run again (their runs are kept for `make student`: chalk.teaching.shared_runs).
# The default site and _build/html stay as they are.
book: $(STAMP)
ifeq ($(STUDENT),1)
	$(BIN)/python -m chalk.teaching.class_site _build/html-student
else
	$(BIN)/jupyter-book build . --all
	@echo "The site is built: open $(CURDIR)/$(SITE)/index.html"
endif

student: $(STAMP)
	$(BIN)/python -m chalk.teaching.edition --out _build/student

# make grade SUBMISSIONS=<folder> [OUT=<new folder>] [ROSTER=<csv>] [TIMEOUT=<seconds per notebook>]
#   [MARKS=<an earlier, marked batch or its manual.csv>]: every submission in a bubblewrap sandbox (bwrap)
# make grade MANUAL=<batch>/manual.csv [OUT=<new folder>]: merge hand-given points into that batch
# Each run writes a new folder (default _build/grades/<date_time>); earlier grades are never overwritten.
grade: $(STAMP)
ifneq ($(MANUAL),)
	$(BIN)/python -m chalk.teaching.grading --merge "$(MANUAL)" $(if $(OUT),--out "$(OUT)")
else
	@test -n "$(SUBMISSIONS)" || { echo "make grade: set SUBMISSIONS=<folder of collected notebooks> (or MANUAL=<batch>/manual.csv)" >&2; exit 2; }
	$(BIN)/python -m chalk.teaching.grading "$(SUBMISSIONS)" $(if $(OUT),--out "$(OUT)") \
	  $(if $(ROSTER),--roster "$(ROSTER)") $(if $(TIMEOUT),--timeout $(TIMEOUT)) $(if $(MARKS),--marks "$(MARKS)")
endif

# make autograder [PROBLEM_SET=NN_name] [TIMEOUT=<seconds per notebook>]: a Gradescope autograder zip
# per problem set (default: every one) in _build/autograder: the student wheel, setup.sh, run_autograder
autograder: $(STAMP)
	$(BIN)/python -m chalk.teaching.autograder build --out _build/autograder \
	  $(if $(PROBLEM_SET),--problem-set "$(PROBLEM_SET)") $(if $(TIMEOUT),--timeout $(TIMEOUT))

deck: $(STAMP)
	$(BIN)/python -m chalk.teaching.decks --out _build/decks

# Every notebook runs once per test run: the chapters and the instructor's problem sets in the
# site build that the browser tests share (-W fails on any cell error), the student editions in
# test_answers_not_printed (and, as a student installs them, in test_student_venv). A file's tests
# stay on one worker (a unit of work per file, or per set-up, chunk or width where conftest.SPLIT
# says: tests/conftest.py's UnitScheduling), so a module's costly fixture (a grading batch, a crawl)
# runs once, and the units run in conftest's order.
test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --no-loadscope-reorder tests

# make bench [BENCH_SKIP=test,build]: budgets in bench/budgets.toml; not a test, it never fails on one.
bench: $(STAMP)
	$(BIN)/python bench/bench.py

# jupyterlab-myst (pinned in requirements.txt) renders the notebooks' MyST prose: {eval} numbers,
# admonitions, folded answers. Enabling it is idempotent. The repository root is served, so that the
# chapters' links to exercises/ and book/ resolve; JupyterLab opens on the notebooks/ folder, the
# chapter list (tests/test_lab.py starts its server with these options). A course notebook is saved
# without outputs (chalk.teaching.lab_metadata.clean_on_save), so Run All and autosave leave git clean.
LAB_OPTIONS := --ServerApp.root_dir=. --LabApp.default_url=/lab/tree/notebooks --ContentsManager.pre_save_hook=chalk.teaching.lab_metadata.clean_on_save
lab: $(STAMP)
	$(BIN)/jupyter labextension enable jupyterlab-myst
	$(BIN)/jupyter lab $(LAB_OPTIONS)

# Grades are kept: the points given by hand in a batch exist nowhere else.
clean:
	if [ -d _build ]; then find _build -mindepth 1 -maxdepth 1 ! -name grades -exec rm -rf {} +; fi
	rm -rf .pytest_cache .hypothesis
	find . -name __pycache__ -not -path './$(VENV)/*' -prune -exec rm -rf {} +
