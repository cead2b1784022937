# Adlake. `make up` runs the platform on embedded defaults; `make test` runs the unit and
# integration tiers (CI), `make test-e2e` the exhaustive end-to-end variants.
# Pinned versions live in include/adlake/local/versions.py; `make setup` derives everything from them
# (the Python environments through the lock files `make lock` writes from them).

PYTHON ?= python3
LAKE_PY := .venv/lake/bin/python
OPS_PY := .venv/ops/bin/python
RATE ?= 200
DURATION ?= 60
SEED ?= 7

.PHONY: lint airflow setup lock test test-unit test-e2e compose-versions compose-env kafka-up kafka-down kafka-status generate up clean \
	app status bench-click-surge bench-attribution bench-bronze bench-engine-soak bench-views bench-quality \
	bench-scale bench-beside bench-pool bench-freshness bench-attribution-batch bench-backfill bench-maintenance bench-supervisor bench-boundary \
	bench-recovery bench-burst-profile bench-lake down \
	faults faults-ops soak bench bench-quick

setup:
	$(PYTHON) include/adlake/local/bootstrap.py

# After changing a Python pin in versions.py: regenerate the lock files (every package pinned, with
# hashes) that make setup and the images install from (include/adlake/local/locks.py; needs the
# package index). ARGS="--check" only says whether they are stale.
lock:
	$(PYTHON) include/adlake/local/locks.py $(ARGS)

# ruff, configured in pyproject.toml: lint, then the format check (`ruff format .` fixes it).
lint: setup
	.venv/lake/bin/ruff check .
	.venv/lake/bin/ruff format --check .

# Airflow's CLI in the platform's environment (AIRFLOW_HOME, DAGs, connections), e.g.
#   make airflow ARGS="dags list"
#   make airflow ARGS="backfill create --dag-id lake_hourly --from-date 2026-11-20 --to-date 2026-11-21"
airflow: setup
	$(LAKE_PY) -m adlake.local.platform airflow $(ARGS)

# Unit and integration (real broker, real Spark, real Airflow metadata DB), with the modules'
# doctests (pyproject's testpaths): in the lake environment, then the ops-runtime tests
# in the ops environment (tests/runtimes.py splits them).
# Each pass prints its wall time at its end.
test: setup
	@t=$$(date +%s); $(LAKE_PY) -m pytest -m "not e2e" --durations=15; rc=$$?; \
	echo "[test] lake pass: $$(( $$(date +%s) - t )) s"; exit $$rc
	@t=$$(date +%s); $(OPS_PY) -m pytest -m "not e2e" --durations=15; rc=$$?; \
	echo "[test] ops pass: $$(( $$(date +%s) - t )) s"; exit $$rc

# The exhaustive end-to-end variants (docs/testing.md): the apps' lifecycle on a real scheduler,
# Airflow backfills, mode switches, the spark:// path. Run it when you change those paths.
test-e2e: setup
	@t=$$(date +%s); $(LAKE_PY) -m pytest -m e2e --durations=15; rc=$$?; \
	echo "[test-e2e] lake pass: $$(( $$(date +%s) - t )) s"; [ $$rc -eq 0 ] || [ $$rc -eq 5 ]
	@t=$$(date +%s); $(OPS_PY) -m pytest -m e2e --durations=15; rc=$$?; \
	echo "[test-e2e] ops pass: $$(( $$(date +%s) - t )) s"; [ $$rc -eq 0 ] || [ $$rc -eq 5 ]

# The long forms of the fault tiers (make test runs their short forms). The lake's
# (tests.faults.run): each lake job killed KILLS times as its own process (its dangerous moment,
# then seeded random moments), then a clean finish compared with an uninterrupted run. Then the
# apps' (faults-ops, below), whatever the lake's gave; then one report of both,
# <runtime>/reports/faults/REPORT.md (tests.faults.report). Fails if any run failed.
KILLS ?= 4
faults: setup
	$(LAKE_PY) -m tests.faults.run --seed $(SEED) --kills $(KILLS); lake=$$?; \
	$(MAKE) --no-print-directory faults-ops; ops=$$?; \
	$(LAKE_PY) -m tests.faults.report && [ $$lake -eq 0 ] && [ $$ops -eq 0 ]

# Only what starts no JVM and no broker (tests/tiers.py fails a unit test that does), both runtimes.
test-unit: setup
	$(LAKE_PY) -m pytest -m unit
	$(OPS_PY) -m pytest -m unit

# After changing a pin in versions.py: rewrite docker-compose.yaml's generated versions block.
compose-versions:
	$(PYTHON) include/adlake/local/compose_versions.py

# Before `docker compose up`: .env with this deployment's generated secrets (mode 600, git-ignored).
compose-env: setup
	$(LAKE_PY) -m adlake.local.credentials compose-env

kafka-up: setup
	$(LAKE_PY) -m adlake.local.kafka up

kafka-down:
	$(LAKE_PY) -m adlake.local.kafka down

kafka-status:
	$(LAKE_PY) -m adlake.local.kafka status

generate: kafka-up
	$(LAKE_PY) -m adlake.generator --rate $(RATE) --duration $(DURATION) --seed $(SEED)

# One streaming app of the registry in the foreground, with the ops interpreter (Ctrl-C or
# SIGTERM stops it gracefully), e.g. make app APP=click_surge ARGS="--threshold 50".
APP ?=
app: kafka-up
	$(LAKE_PY) -m adlake.apps run $(APP) $(ARGS)

# Every streaming app's status and lifecycle (adlake.apps.cli).
status:
	$(LAKE_PY) -m adlake.apps status

# Benchmarks (not tests; the bench/ package, not part of the product): each starts a broker and
# a runtime of its own, measures, and writes JSON under <runtime>/reports. Latency of one app
# (bench.ops.latency; BENCH_DURATION measured seconds a run): click-surge in Real-Time Mode and
# in micro-batch, at 1,000 events/s.
BENCH_DURATION ?= 60
bench-click-surge: setup
	$(OPS_PY) -m bench.ops.latency click_surge --rates 1000 --duration $(BENCH_DURATION)

# Attribution in Real-Time Mode gets a task slot per source and shuffle partition (6 + 2 with the
# local defaults); 120 s of warm-up (the JIT of its long-lived tasks on 2 cores); a 5-minute
# checkpoint interval keeps its boundary (where timers fire) out of the measured minute: see
# docs/bench/attribution-boundary.md.
bench-attribution: setup
	$(OPS_PY) -m bench.ops.latency attribution \
		--modes realtime,processing_time --rates 1000,2000,4000 --rtm-interval "5 minutes" \
		--warmup 120 --duration $(BENCH_DURATION)

# Bronze ingest (steady and wall records/s, start-up) and each lake job's fixed cost.
bench-bronze: setup
	$(LAKE_PY) -m bench.lake.bronze

# The lake engine's resident memory over 30 minutes with the hourly chain and a view refresh on
# it every 3 minutes (bench.lake.engine_soak; writes <reports>/bench/engine-soak.json).
bench-engine-soak: setup
	$(LAKE_PY) -m bench.lake.engine_soak

# Incremental vs full refresh of a view over a 10M-row source.
bench-views: setup
	$(LAKE_PY) -m bench.lake.views --rows 10000000

# The quality jobs: validating an hour's gold and a view, in process and as the DAG runs them.
bench-quality: setup
	$(LAKE_PY) -m bench.lake.quality

# Gold at scale: the hourly and daily runs with 1, 7 and 30 days of silver history, and the
# day's first hour against its last (1M synthetic silver rows a day; 19 minutes on 2 shared cores).
bench-scale: setup
	$(LAKE_PY) -m bench.lake.scale

# Both apps' latency with the lake idle, then while the lake engine runs the hourly chain and the
# view refreshes in rounds on the same cores (bench.ops.beside; about 15 minutes).
bench-beside: setup
	$(OPS_PY) -m bench.ops.beside

# The hour's views and gold published with one lake pool slot or two, on the lake engine
# (bench.lake.pool; about 20 minutes).
bench-pool: setup
	$(LAKE_PY) -m bench.lake.pool

# Freshness under `make up` with traffic: each scheduled hour's publication in gold and in every
# view, seconds after the hour closes (bench.lake.freshness; HOURS hours, up to three hours).
HOURS ?= 2
bench-freshness: setup
	$(LAKE_PY) -m bench.lake.freshness --hours $(HOURS) --rate $(RATE)

# The reconciliation's batch attribution over a day of 1M silver rows: state in memory against the
# state server, and its gold job on the engine (bench.lake.attribution_batch; about 6 minutes).
bench-attribution-batch: setup
	$(LAKE_PY) -m bench.lake.attribution_batch

# A backfill of 7 days of 1M silver rows a day through the platform's own Airflow scheduler,
# then its gold against one rebuild of the same days (bench.lake.backfill; about an hour).
bench-backfill: setup
	$(LAKE_PY) -m bench.lake.backfill

# 200 hourly runs' writes on page clicks (silver append, gold's hour, the view's MERGE), then
# files, bytes and read times without and with one lake_maintenance run (bench.lake.maintenance).
bench-maintenance: setup
	$(LAKE_PY) -m bench.lake.maintenance

# what apps_supervisor's run every minute costs (CPU, metadata rows, log files) and the
# trade-off of a longer interval (bench.ops.supervisor; Airflow runs in the lake environment).
bench-supervisor: setup
	$(LAKE_PY) -m bench.ops.supervisor

# Real-Time Mode's checkpoint boundary against partitions, state-store settings and the timer
# burst (bench.ops.boundary: one 3-minute run per configuration and app, about an hour in all;
# runs already in BENCH_DIR/boundary/ are kept, so an interrupted matrix resumes).
bench-boundary: BENCH_DIR = $(REPORTS)/bench
bench-boundary: setup
	$(OPS_PY) -m bench.ops.boundary --out-dir "$(BENCH_DIR)"

# What kill -9 of click-surge's driver mid-interval costs at each checkpoint interval (30 s, 1 and
# 5 minutes): the outage, the input replayed, duplicates, seconds until back under the page's
# target (bench.ops.recovery: about 25 minutes; runs already in BENCH_DIR/recovery/ are kept).
# Not in make bench; the report built in BENCH_DIR shows the runs there.
bench-recovery: BENCH_DIR = $(REPORTS)/bench
bench-recovery: setup
	$(OPS_PY) -m bench.ops.recovery --out-dir "$(BENCH_DIR)"

# Where attribution's timer burst spends its time: a flight recording (JFR) of the app's JVM
# through one run with closes due at every boundary, split by category inside the stalls
# (bench.ops.burst_profile: about 5 minutes).
bench-burst-profile: BENCH_DIR = $(REPORTS)/bench
bench-burst-profile: setup
	$(OPS_PY) -m bench.ops.burst_profile --out-dir "$(BENCH_DIR)"

# Both lake benchmarks, as before they had targets of their own.
bench-lake: bench-bronze bench-views

# The benchmark report: the apps' latency suite (with the bare Kafka hop), bronze ingest, the
# view refresh suite, gold at scale, the apps beside the chain, the backfill and table
# maintenance, in sequence, each writing its JSON into BENCH_DIR (<runtime>/reports/bench);
# then bench.report writes BENCH_DIR/REPORT.md and its plots from whatever JSON is there. A
# benchmark that fails leaves its section "not run" and, after the report, fails the target.
# docs/bench/ holds the committed report of a full run.
REPORTS = $(shell $(LAKE_PY) -c 'from adlake.config import load_settings; print(load_settings().reports_dir)')
BENCH_JSON = ops.json bronze.json views.json scale.json beside.json backfill.json maintenance.json
# What only the quick run writes anew: make bench keeps BENCH_DIR's recovery.json (its runs are
# make bench-recovery's).
BENCH_QUICK_JSON = recovery.json
bench: BENCH_DIR = $(REPORTS)/bench
bench: setup
	mkdir -p "$(BENCH_DIR)" && cd "$(BENCH_DIR)" && rm -f $(BENCH_JSON)
	$(OPS_PY) -m bench.ops.suite --out-dir "$(BENCH_DIR)"; ops=$$?; \
	$(LAKE_PY) -m bench.lake.bronze --out-dir "$(BENCH_DIR)"; bronze=$$?; \
	$(LAKE_PY) -m bench.lake.views --suite --out-dir "$(BENCH_DIR)"; views=$$?; \
	$(LAKE_PY) -m bench.lake.scale --out-dir "$(BENCH_DIR)"; scale=$$?; \
	$(OPS_PY) -m bench.ops.beside --out-dir "$(BENCH_DIR)"; beside=$$?; \
	$(LAKE_PY) -m bench.lake.backfill --out-dir "$(BENCH_DIR)"; backfill=$$?; \
	$(LAKE_PY) -m bench.lake.maintenance --out-dir "$(BENCH_DIR)"; maintenance=$$?; \
	$(OPS_PY) -m bench.report "$(BENCH_DIR)" --to "$(BENCH_DIR)" --command "make $@" && \
	[ $$ops -eq 0 ] && [ $$bronze -eq 0 ] && [ $$views -eq 0 ] && [ $$scale -eq 0 ] && \
	[ $$beside -eq 0 ] && [ $$backfill -eq 0 ] && [ $$maintenance -eq 0 ]

# A smoke run of the same tools and the report, into <runtime>/reports/bench-quick: a few
# minutes on 2 cores; CI runs it (tests/bench/ops/test_report.py). Side by
# side: the apps' suite --quick (the Kafka hop, then one app in Real-Time Mode: 8 s of traffic at
# 200 events/s) and python -m bench.lake --quick (one Spark session: bronze ingest of 2,000
# records without silver or the fixed costs, then the views suite on one 20,000-row source
# without verify or delete/update), then python -m bench.lake.scale --quick (gold over 2,000
# silver rows a day, 1 to 3 days, in a session of its own: 166 s at load 7 to 9); then the report.
# The apps' side runs the crash recovery's smoke form after the suite (bench.ops.recovery --quick:
# one kill -9 at a 5 s interval, under a minute of traffic and two app starts), whatever the
# suite's status; the job fails if either does.
# Not in it: the quality benchmark and the soak (minutes each: bench-quality, soak).
bench-quick: BENCH_DIR = $(REPORTS)/bench-quick
bench-quick: setup
	mkdir -p "$(BENCH_DIR)" && cd "$(BENCH_DIR)" && rm -f $(BENCH_JSON) $(BENCH_QUICK_JSON)
	( $(OPS_PY) -m bench.ops.suite --quick --out-dir "$(BENCH_DIR)"; suite=$$?; \
	  $(OPS_PY) -m bench.ops.recovery --quick --out-dir "$(BENCH_DIR)"; recovery=$$?; \
	  [ $$suite -eq 0 ] && [ $$recovery -eq 0 ] ) & ops_pid=$$!; \
	$(LAKE_PY) -m bench.lake --quick --out-dir "$(BENCH_DIR)"; lake=$$?; \
	$(LAKE_PY) -m bench.lake.scale --quick --out-dir "$(BENCH_DIR)"; scale=$$?; \
	wait $$ops_pid; ops=$$?; \
	$(OPS_PY) -m bench.report "$(BENCH_DIR)" --to "$(BENCH_DIR)" --command "make $@" && \
	[ $$ops -eq 0 ] && [ $$lake -eq 0 ] && [ $$scale -eq 0 ]

# The streaming apps' fault tests, long form (make test runs the short one): several kill -9 of
# each app and broker bounces against an uninterrupted run, and a short soak (tests/bench/ops);
# each faulted run writes <runtime>/reports/faults/ops-<scenario>-<time>.json. Part of `make faults`.
faults-ops: setup
	FAULTS_FORM=long $(OPS_PY) -m pytest -m faults tests/spark_apps/ops tests/bench/ops --durations=10

# Not in CI: every streaming app at SOAK_RATE events/s each for SOAK_MIN minutes, sampled every
# minute; JSON and a PNG plot under <runtime>/reports/soak/ (bench/ops/soak.py).
SOAK_MIN ?= 30
SOAK_RATE ?= 1000
soak: setup
	$(OPS_PY) -m bench.ops.soak --duration-min $(SOAK_MIN) --rate $(SOAK_RATE)

# The platform on embedded defaults (adlake.local.platform): the broker, Airflow (api-server, scheduler,
# dag-processor, triggerer; metadata on SQLite), every DAG unpaused, every streaming app started
# through its Airflow DAG (SET: knobs of their starts, APP.KNOB=VALUE separated by spaces, e.g.
# SET="click_surge.threshold=50"); then live generated traffic in the foreground for DURATION
# seconds. Every path comes from the configuration (ADLAKE_RUNTIME_DIR). Idempotent: a second
# `make up` finds everything running and only sends traffic.
SET ?=
up: setup
	$(LAKE_PY) -m adlake.local.platform up $(foreach knob,$(SET),--set $(knob))
	$(LAKE_PY) -m adlake.generator --rate $(RATE) --duration $(DURATION) --seed $(SEED)
	@echo "the platform keeps running: 'make status' shows the apps, 'make down' stops everything"

# Stops the apps gracefully (and waits for them), then Airflow, then the broker.
down:
	$(LAKE_PY) -m adlake.local.platform down

clean: down
	rm -rf "$$($(LAKE_PY) -c 'from adlake.config import load_settings; print(load_settings().runtime_dir)')"
