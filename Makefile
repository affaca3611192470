# Two commands on a fresh machine: `make serve` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
SCHEMA ?= schemas/book.schema.json
STORAGE ?= ./data

.PHONY: install serve serve-stdio test lint crash fuzz docs-browser bench-docs bench-journal bench bench-history bench-inventory bench-archive bench-migrate bench-check bench-postgres bench-throughput bench-workers bench-instructions bench-refusals bench-rest bench-observability bench-validation bench-repair bench-agents bench-limits bench-startup bench-shutdown bench-ui bench-ui-status bench-memory bench-hostile docs clean inspector

# development: the server, the client, the conformance suite and the tools (make test)
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

# serving only: the runtime dependencies, no development tools (a development venv already has them)
$(VENV)/.serve-installed: pyproject.toml
	@if [ -f $(VENV)/.installed ] && [ $(VENV)/.installed -nt pyproject.toml ]; then touch $@; else \
	  $(PYTHON) -m venv $(VENV) && $(PY) -m pip install -q --upgrade pip && $(PY) -m pip install -q -e . && touch $@; fi

install: $(VENV)/.serve-installed  ## what serving needs, in .venv (pip install -e .)

serve: $(VENV)/.serve-installed  ## REST + MCP (streamable HTTP) on http://127.0.0.1:8080
	$(VENV)/bin/schemadoc serve --schema $(SCHEMA) --storage-dir $(STORAGE)

serve-stdio: $(VENV)/.serve-installed  ## MCP on stdin/stdout
	$(VENV)/bin/schemadoc serve --transport stdio --schema $(SCHEMA) --storage-dir $(STORAGE)

lint: $(VENV)/.installed
	$(PY) -m ruff check src tests benchmarks
	$(PY) -m mypy --strict src

# the default suite in two worker processes; each test file, and the whole conformance suite, stays in one
# worker (src/schemadoc/conformance/suite/conftest.py), so more workers would barely help: the suite is about
# half of the work. Not -n auto: it counts physical cores, 1 on a 2-vCPU machine with hyperthreads.
# PYTEST_WORKERS=0 runs it in this process.
PYTEST_WORKERS ?= 2

test: lint  ## lint, types, then the whole suite
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadfile

.PHONY: conformance
conformance: $(VENV)/.installed  ## the whole conformance suite through every door, and both variant catalogues
	$(PY) -m pytest -m slow -n $(PYTEST_WORKERS) --dist load tests/conformance

bench-journal: $(VENV)/.installed  ## every-write beside lazy snapshots: writes, open, reads during a snapshot, disk
	$(PY) benchmarks/journal.py

crash: $(VENV)/.installed  ## 1,000 kill -9 during writes, snapshots and recovery (SCHEMADOC_CRASH_KILLS)
	$(PY) -m pytest -m slow -s -p no:randomly tests/e2e/test_crash_recovery.py::test_many_more_kills

fuzz: $(VENV)/.installed  ## long fuzzing: schemathesis on a real server (stateful), then REST and MCP in process
	$(PY) tests/fuzz/schemathesis_cli.py --max-examples $(or $(FUZZ_EXAMPLES),40) --workers 1
	SCHEMADOC_FUZZ_EXAMPLES=$(or $(FUZZ_EXAMPLES),40) SCHEMADOC_FUZZ_MCP_EXAMPLES=$(or $(FUZZ_MCP_EXAMPLES),500) SCHEMADOC_FUZZ_READ_ONLY_EXAMPLES=$(or $(FUZZ_READ_ONLY_EXAMPLES),1000) $(PY) -m pytest -p no:randomly -o addopts="-q -ra" tests/fuzz

bench: $(VENV)/.installed  ## benchmarks (figures, not pass/fail)
	$(PY) benchmarks/run.py
	$(PY) benchmarks/refusals.py
	$(PY) benchmarks/memory.py

bench-refusals: $(VENV)/.installed  ## black box: refused beside accepted leaf updates, REST and MCP stdio, 10 KB to 100 MB (REFUSALS_ARGS=--quick)
	$(PY) benchmarks/refusals.py $(REFUSALS_ARGS)

bench-memory: $(VENV)/.installed  ## 1,000 books of 10 MB under a 1 GiB budget: peak RSS, warm and cold reads and writes (--documents N)
	$(PY) benchmarks/memory.py $(MEMORY_ARGS)

bench-find: $(VENV)/.installed  ## filters, full-text search, list pages and writes with the search index over books of ~35 KB (FIND_ARGS="--documents N --postgres")
	$(PY) benchmarks/find.py $(FIND_ARGS)

bench-inventory: $(VENV)/.installed  ## the background inventory of 1,000 books of 1 MiB under a 256 MiB budget: time, peak RSS (INVENTORY_ARGS=--documents N)
	$(PY) benchmarks/inventory.py $(INVENTORY_ARGS)

bench-history: $(VENV)/.installed  ## past reads, diffs, reverts on a 10,000-version document
	$(PY) benchmarks/history.py

bench-archive: $(VENV)/.installed  ## export and import of 20 and 200 books of 1 MiB: peak RSS and time of each process (ARCHIVE_ARGS=--postgres)
	$(PY) benchmarks/archive.py $(ARCHIVE_ARGS)

bench-check: $(VENV)/.installed  ## schemadoc check of 1,000 books of 1 MiB (journal tails replayed): time and peak RSS (CHECK_ARGS=--postgres)
	$(PY) benchmarks/check.py $(CHECK_ARGS)
bench-migrate: $(VENV)/.installed  ## migrate-documents over 1,000 books of 1 MiB under a 256 MiB budget: time and peak RSS per run (MIGRATE_ARGS=--postgres)
	$(PY) benchmarks/migrate_documents.py $(MIGRATE_ARGS)

bench-postgres: $(VENV)/.installed  ## the PostgreSQL store beside the files store (needs PostgreSQL)
	$(PY) benchmarks/postgres.py

bench-throughput: $(VENV)/.installed  ## black box: REST per operation (10 MB) and writes/s at 1, 8, 32 clients, files and PostgreSQL (THROUGHPUT_ARGS)
	$(PY) benchmarks/throughput.py $(THROUGHPUT_ARGS)

bench-workers: $(VENV)/.installed  ## black box: writes/s at 1, 8, 32 clients through serve --workers 1 beside 2, files store (WORKERS_ARGS="--stores files,postgres --workers 1,2,3")
	$(PY) benchmarks/throughput.py --no-ops --stores files --workers 1,2 --out benchmarks/results/throughput-workers.md $(WORKERS_ARGS)

bench-instructions: $(VENV)/.installed  ## instructions per request (callgrind): read, write, leaf update; steady under load
	$(PY) benchmarks/instructions.py

bench-rest: $(VENV)/.installed  ## black box: a real server on 127.0.0.1, REST reads and writes (10 KB to 100 MB)
	$(PY) benchmarks/rest.py

bench-observability: $(VENV)/.installed  ## what observing a request costs: per piece in process; REST with metrics + JSON logs beside neither
	$(PY) benchmarks/observability.py
	$(PY) benchmarks/rest.py --quick --server off= --server on= --server off2= --server on2= \
	  --server-env off:METRICS=false --server-env off2:METRICS=false --server-env on:LOG_FORMAT=json \
	  --server-env on2:LOG_FORMAT=json --out benchmarks/results/rest-observability.md

bench-hostile: $(VENV)/.installed  ## black box: slow and greedy clients; the server's RSS and a good client's p50/p99
	$(PY) benchmarks/hostile.py

bench-agents: $(VENV)/.installed  ## MCP tools on 10 and 100 MiB books, search over 100 documents
	$(PY) benchmarks/agents.py

docs: $(VENV)/.installed  ## regenerate docs/errors.md and docs/tools.md from the catalogs
	$(PY) -m schemadoc.errors > docs/errors.md
	$(PY) -m schemadoc.operations.reference > docs/tools.md

docs-browser: $(VENV)/.installed  ## /docs and /redoc rendered offline by headless Chromium from a real server (installs chromium)
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium; \
	  else sudo apt-get update -qq && sudo apt-get install -y -qq chromium; fi; }
	$(PY) -m pytest -m slow -p no:randomly tests/e2e/test_api_docs_browser.py

bench-docs: $(VENV)/.installed  ## the API documentation pages: asset sizes, render time in headless Chromium
	$(PY) benchmarks/api_docs.py

inspector:  ## the MCP Inspector (TypeScript SDK) for the client-depth test, in .tools/npm
	npm install --no-audit --no-fund --prefix .tools/npm @modelcontextprotocol/inspector@0.15.0

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis

bench-limits: $(VENV)/.installed  ## the one walk of a written value beside the write (0.1, 1, 10 MiB), whole writes through REST and MCP (1, 10 MiB), a subscriber slot
	$(PY) benchmarks/limits.py

bench-repair: $(VENV)/.installed  ## the repair rule's cost on a write (a document the schema already rejects) beside a normal write, 1 and 10 MiB
	$(PY) benchmarks/repair.py

bench-validation: $(VENV)/.installed  ## validation per write, incremental beside whole, at 1/10/100 MiB
	$(PY) benchmarks/validation.py

bench-startup: $(VENV)/.installed  ## building the service, the MCP server and the REST app (cold, warm); serve to first answer
	$(PY) benchmarks/startup.py

bench-shutdown: $(VENV)/.installed  ## SIGTERM to a real server: idle, 100 event streams, under write load (to the log line, to exit)
	$(PY) benchmarks/shutdown.py

bench-ui: $(VENV)/.installed  ## the page at /ui on a 100 MiB book in headless Chromium: first paint, tree, expanding a node
	$(PY) benchmarks/ui.py

bench-ui-status: $(VENV)/.installed  ## the status view in headless Chromium: parsing, keeping and drawing one reading of /metrics
	$(PY) benchmarks/ui_status.py

.PHONY: bench-search-quality bench-semantic
bench-search-quality: $(VENV)/.installed  ## recall@5 of text, semantic and hybrid search over generated books (paraphrased and lexical queries)
	$(PY) benchmarks/search_quality.py

bench-semantic: $(VENV)/.installed  ## semantic search's cost: embedding a write, a query reading every code and by cells at 100,000 and 1,000,000 vectors (SEMANTIC_ARGS="--units N ... --startup-books N")
	$(PY) benchmarks/semantic_cost.py $(SEMANTIC_ARGS)
