# README's commands. Each target sets up .venv from the pinned requirements when needed.
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SITE := _build/html
PROBLEM_SETS := $(wildcard exercises/[0-9]*.ipynb)

.PHONY: book test lab clean bench student

$(STAMP): requirements.txt lib/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements.txt
	touch $(STAMP)

book: $(STAMP)
	$(BIN)/jupyter-book build . --all
	@echo "The site is built: open $(CURDIR)/$(SITE)/index.html"

student: $(STAMP)
	$(BIN)/python -m chalk.student $(PROBLEM_SETS) --out _build/student/exercises

test: $(STAMP) student
	$(BIN)/python -m pytest -n 2 --dist loadfile tests \
	  --nbmake notebooks exercises _build/student/exercises

bench: $(STAMP)
	$(BIN)/python bench/bench.py

lab: $(STAMP)
	$(BIN)/jupyter lab notebooks

clean:
	rm -rf _build .pytest_cache .hypothesis
	find . -name __pycache__ -not -path './$(VENV)/*' -prune -exec rm -rf {} +
