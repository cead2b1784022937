# Adlake. `make up` runs the platform on embedded defaults; `make test` runs every test tier.
# Pinned versions live in include/adlake/versions.py; `make setup` derives everything from them.

PYTHON ?= python3
LAKE_PY := .venv/lake/bin/python
OPS_PY := .venv/ops/bin/python
RATE ?= 200
DURATION ?= 60
SEED ?= 7
# Tests that check the session factory itself run under both runtimes.
BOTH_RUNTIMES_TESTS := tests/include/test_spark_session.py

.PHONY: setup test test-unit test-lake test-ops kafka-up kafka-down kafka-status generate up clean

setup:
	$(PYTHON) include/adlake/setup.py

# Every tier that can run here: unit, integration (real broker, real Spark) and e2e, in the lake
# environment, then the ops-runtime tests in the ops environment.
test: setup
	$(LAKE_PY) -m pytest tests
	$(OPS_PY) -m pytest tests $(BOTH_RUNTIMES_TESTS)

test-unit: setup
	$(LAKE_PY) -m pytest tests -m unit

kafka-up: setup
	$(LAKE_PY) -m adlake.kafka_local up

kafka-down:
	$(LAKE_PY) -m adlake.kafka_local down

kafka-status:
	$(LAKE_PY) -m adlake.kafka_local status

generate: kafka-up
	$(LAKE_PY) -m adlake.generator --rate $(RATE) --duration $(DURATION) --seed $(SEED)

# The platform on embedded defaults. For now: the broker plus live generated traffic.
up: generate

clean: kafka-down
	rm -rf .runtime
