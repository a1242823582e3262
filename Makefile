# Two commands: `make demo` (set up + run the main job end to end) and `make test`.
# Both create .venv when it is missing (torch==2.13.0 first, then the package) and reuse it after.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.fairseq_tpr-installed

.PHONY: venv sysdeps test lint test-slow demo demo-quick bench docs

venv: $(STAMP) sysdeps

# Perl XML::Parser (official ROUGE-1.5.5) and Java (METEOR): apt-get when root, else a clear warning
sysdeps:
	@bash scripts/system_deps.sh

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# torch first, so that nothing below replaces it with another build
	$(BIN)/pip install --quiet torch==2.13.0 cython "setuptools>=77"
	# the package without build isolation (keeps that torch; fastBPE builds against that Cython), with
	# what the tests and the demo use: pytest, tensorboardX, pycocoevalcap (METEOR, CIDEr), MiniLM, the RST parser, MkDocs
	$(BIN)/pip install --quiet --no-build-isolation -e ".[dev,docs,logging,captioning,extractive,rst]"
	$(BIN)/python -c "import torch, fairseq, fairseq_tpr; print('torch', torch.__version__, '| fairseq', fairseq.__version__, '| fairseq_tpr ready')"
	touch $(STAMP)

# the default set (pytest.ini leaves out tests marked slow; prints the 15 slowest), after the pyflakes
# rules of ruff (unused imports and locals, undefined names) over the code and the tests
test: venv lint
	$(BIN)/python -m pytest -q tests

lint: venv
	$(BIN)/ruff check --select F fairseq_tpr tests benchmarks scripts

# the long end-to-end runs marked slow (recipes, METEOR, the DeepMind generator, CLI round trips)
test-slow: venv
	$(BIN)/python -m pytest -q -m slow tests

# the main job: Mathematics Dataset -> small tp_transformer on CPU -> exact-match table (~20 min on 2 cores)
demo: venv
	PATH="$(CURDIR)/$(BIN):$$PATH" bash recipes/math/demo.sh

# a smoke run of about a minute (55-62 s measured on 2 cores busy with other jobs; training stops
# after 400 updates or 1.5 minutes): tp_transformer_d_tiny learns to reverse letter sequences
demo-quick: venv
	PATH="$(CURDIR)/$(BIN):$$PATH" bash recipes/demo/reverse.sh

bench: venv
	$(BIN)/python benchmarks/throughput.py

# the documentation site (mkdocs.yml, the Material theme) into site/; --strict: a broken link or anchor fails
docs: venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict
