"""Adlake's benchmark, soak and report tooling: it measures the product, it is not part of it.

Nothing under ``include/``, ``spark_apps/``, ``dags/`` or ``plugins/`` imports this package, and
the Airflow image does not ship it. Each tool starts what it measures on a broker and a runtime
of its own (:mod:`bench.harness`) and writes JSON; :mod:`bench.report` builds one report from
it, each benchmark's part of it a ``*_report`` module beside the benchmark. The Makefile's
``bench-*``, ``bench``, ``bench-quick`` and ``soak`` targets run them.

* :mod:`bench.ops` (the ops runtime, Spark 4.3): the streaming apps' latency
  (:mod:`bench.ops.latency`), the bare Kafka hop under it (:mod:`bench.ops.kafka_hop`) and the
  soak (:mod:`bench.ops.soak`).
* :mod:`bench.lake` (the lake runtime, Spark 4.2): bronze ingest and the jobs' fixed costs
  (:mod:`bench.lake.bronze`), view refresh (:mod:`bench.lake.views`) and the quality jobs
  (:mod:`bench.lake.quality`).
"""
