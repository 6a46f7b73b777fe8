# Two commands on a fresh clone: `make demo` and `make test`. Each sets up .venv on its own.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_INDEX := .kebab/demo-index

.PHONY: demo test test-real-model lint typecheck bench eval clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/kebab index fixtures/workspace --index-dir $(DEMO_INDEX)
	$(BIN)/kebab ask "What time does the nightly backup run?" --root fixtures/workspace --index-dir $(DEMO_INDEX)
	$(BIN)/kebab ask "What port does Redis listen on?" --root fixtures/workspace --index-dir $(DEMO_INDEX)
	$(BIN)/kebab ask "김치찌개는 중약불로 몇 분 끓여야 해?" --root fixtures/workspace --index-dir $(DEMO_INDEX)

test: $(STAMP)
	$(BIN)/ruff check server tests bench
	$(BIN)/ruff format --check server tests bench
	$(BIN)/mypy
	$(BIN)/pytest -q -p no:cacheprovider
	cd client-vscode && npm ci --no-audit --no-fund --loglevel=error && npm test

# The real model-server tier (tests/real_model): llama.cpp's server and SmolLM2-135M, set up in
# ~/.cache/kebab-real-model (the wheel built once, ~6 min on 2 cores), then the tests.
test-real-model: $(STAMP)
	bash tests/real_model/setup.sh
	KBTEST_REAL_MODEL=1 $(BIN)/pytest -q -p no:cacheprovider -p no:randomly -rs tests/real_model

lint: $(STAMP)
	$(BIN)/ruff check server tests bench
	$(BIN)/ruff format --check server tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/pip install --quiet matplotlib
	mkdir -p bench/out
	$(BIN)/python bench/run_all.py > bench/out/run_all.json
	@echo "figures: bench/out/run_all.json, plot: docs/scale.png"

eval: $(STAMP)
	$(BIN)/kebab eval fixtures/eval/questions.jsonl --corpora ../shared/corpora --all-modes --out bench/out/eval.jsonl

clean:
	rm -rf $(VENV) .kebab
