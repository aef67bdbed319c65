# Everyday verbs (STYLE 14). Every target installs what it needs into .venv first.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PYTHON ?= python3

.PHONY: install dev test test-unit test-integration test-infra lint format layer synth openapi bench bench-doc-qa clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q -e '.[local,dev,infra]'
	touch $@

install: $(VENV)/.installed

## The local stack: embedded PostgreSQL + pgvector, moto, the API on http://127.0.0.1:8787
dev: install console
	$(VENV)/bin/contextos dev

## The whole suite: unit, integration (real PostgreSQL + moto), e2e (local stack over HTTP), infra (CDK)
test: install console
	$(PY) -m pytest

test-unit: install
	$(PY) -m pytest tests/unit

test-integration: install
	$(PY) -m pytest tests/integration tests/e2e

test-infra: install
	$(PY) -m pytest tests/infra

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

## The domain layer for Lambda (arm64, CPython 3.12), built without Docker
layer: install
	bash layers/build.sh

## CloudFormation from the CDK app (add CDK_ARGS="-c database=cockroach" for the other mode)
synth: layer console
	test -d node_modules || npm ci --no-audit --no-fund
	npx cdk synth -q $(CDK_ARGS)

openapi: install
	$(PY) -m contextos.api.write_openapi docs/openapi.json

bench: install
	$(PY) -m benchmarks.embedding

## Extraction quality over third-party documents (two of them are PDFs from Debian packages)
bench-doc-qa: install
	dpkg -s libtasn1-doc shared-mime-info >/dev/null 2>&1 || apt-get install -y libtasn1-doc shared-mime-info
	$(PY) -m benchmarks.doc_qa

clean:
	rm -rf $(VENV) cdk.out layers/build .pytest_cache .ruff_cache

## The web console (console/dist, served by the local stack at /console)
console/node_modules/.package-lock.json: console/package-lock.json
	cd console && npm ci --no-audit --no-fund

console: console/node_modules/.package-lock.json
	cd console && npm run build

.PHONY: console
