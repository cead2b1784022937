"""Benchmark of the analytical side (not a test): bronze ingest throughput, then incremental vs
full view refresh, from one run, printed and written as JSON.

1. **Bronze.** Starts a broker of its own on free loopback ports (runtime under a temporary
   directory), fills ``page_clicks`` with ``--bronze-records`` valid clicks (written by a Spark
   batch job, so the producer is not what is measured), then runs the bronze job's
   ``AvailableNow`` ingest of that topic on a fresh checkpoint and reports records/s over its
   whole wall time: query start, every batch and its Delta commits. It checks that the bronze
   table holds exactly the records sent.
2. **Views.** :mod:`spark_apps.lake.views_benchmark` over ``--rows`` source rows (one or more
   sizes) with ``--change-fraction`` of them changed: one incremental refresh against one full
   refresh per size.

    .venv/lake/bin/python -m spark_apps.lake.benchmark                       # 1M records, 10M rows
    .venv/lake/bin/python -m spark_apps.lake.benchmark --rows 1000000 --bronze-records 200000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from adlake import registry
from adlake.config import Settings, load_settings
from adlake.helpformat import HelpFormatter
from adlake.kafka_local import scratch_broker
from spark_apps.lake import bronze, views_benchmark
from spark_apps.lake.tables import table_path

TOPIC = "page_clicks"


def fill_topic(spark, settings: Settings, topic: str, records: int) -> None:
    """``records`` valid clicks into ``topic``, spread over its partitions by key."""
    from pyspark.sql import functions as F

    fields = {
        "click_id": F.concat(F.lit("k"), F.col("id").cast("string")),
        "page_id": F.concat(F.lit("p"), (F.col("id") % 1000).cast("string")),
        "user_id": F.concat(F.lit("u"), (F.col("id") % 50_000).cast("string")),
        "event_time": F.date_format(F.current_timestamp(), "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"),
    }
    names = registry.topic(topic).schema.names
    missing = set(names) - set(fields)
    if missing:
        raise RuntimeError(f"fill_topic does not know how to fill {sorted(missing)} of {topic}")
    (spark.range(records, numPartitions=settings.shuffle_partitions)
     .select(fields["click_id"].alias("key"),
             F.to_json(F.struct(*(fields[n].alias(n) for n in names))).alias("value"))
     .write.format("kafka").option("kafka.bootstrap.servers", settings.kafka_bootstrap)
     .option("topic", topic).save())


def bench_bronze(spark, base: Settings, records: int) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="adlake-bench-bronze-"))
    with scratch_broker(base, workdir) as settings:
        started = time.monotonic()
        fill_topic(spark, settings, TOPIC, records)
        fill_s = time.monotonic() - started
        print(f"[bench] bronze: {records:,} records in {TOPIC} ({fill_s:.1f} s)", flush=True)
        started = time.monotonic()
        written = bronze.run(spark, settings, [TOPIC])
        ingest_s = time.monotonic() - started
        table = bronze.bronze_table(TOPIC)
        stored = spark.read.format("delta").load(table_path(settings, table)).count()
    if stored != records or written[table.name] != records:
        raise RuntimeError(f"bronze holds {stored:,} rows (query reported "
                           f"{written[table.name]:,}) for {records:,} records sent")
    result = {"records": records, "topic_partitions": registry.topic(TOPIC).partitions,
              "ingest_s": round(ingest_s, 1), "records_per_s": round(records / ingest_s)}
    print(f"[bench] bronze: {records:,} records ingested in {ingest_s:.1f} s = "
          f"{result['records_per_s']:,} records/s", flush=True)
    return result


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="spark_apps.lake.benchmark", description=__doc__,
                                     formatter_class=HelpFormatter)
    parser.add_argument("--bronze-records", type=int, default=1_000_000,
                        help="records produced to page_clicks and ingested by bronze")
    parser.add_argument("--skip-views", action="store_true",
                        help="measure bronze only")
    parser.add_argument("--out", default=None, help="JSON report (unset: <reports>/bench-lake-…)")
    args, rest = parser.parse_known_args(argv)
    args.views = views_benchmark.parse_args(rest)  # --rows, --change-fraction, …
    return args


def main(argv: Sequence[str] | None = None) -> int:
    from adlake.spark_session import get_session

    args = parse_args(argv)
    settings = load_settings()
    spark = get_session("lake", "lake-benchmark", settings,
                        extra_conf=dict(item.split("=", 1) for item in args.views.conf))
    report: dict = {"cores": os.cpu_count(), "master": spark.sparkContext.master,
                    "bronze": bench_bronze(spark, settings, args.bronze_records)}
    if not args.skip_views:
        report["views"] = [views_benchmark.run(spark, settings, args.views, rows)
                           for rows in args.views.rows]
        for v in report["views"]:
            print(f"[bench] views: incremental {v['incremental_s']:.1f} s vs full "
                  f"{v['full_s']:.1f} s = {v['ratio_full_over_incremental']}x ({v['rows']:,} "
                  f"rows, {v['change_fraction']:.1%} changed)", flush=True)
        print(views_benchmark.summary(report["views"]), flush=True)
    out = Path(args.out) if args.out else settings.reports_dir / \
        f"bench-lake-{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "views"}, indent=2))
    print(f"[bench] written to {out}")
    return 1 if any(v.get("differences") for v in report.get("views", [])) else 0


if __name__ == "__main__":
    sys.exit(main())
