"""A view refresh whose driver runs in a zone with daylight saving time (``TZ=Europe/Berlin``).

The night of 2026-10-25 Berlin's clocks fall back from 03:00 CEST to 02:00 CET: 00:30Z and
01:30Z are both 02:30 on the wall. PySpark converts a TIMESTAMP collected to the driver to a naive
datetime in the process's local zone (and back through it), so an engine that carried the view's
hour keys through Python would see the groups 00:00Z and 01:00Z as one. The Spark session's own
zone stays UTC, as the platform sets it: what differs is the zone of the driver process, here a
real ``python -m spark_apps.lake.views`` with ``TZ`` in its environment (its JVM inherits it too).

Seeding, the full refresh and the checks run in this test's session (shared with the other
tests); only the incremental refresh runs in the Berlin driver. Times are compared in Spark (as
text in the session's zone, UTC), never as Python datetimes, so the check itself does not depend
on the zone this test runs in.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime

import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from adlake import registry
from adlake.apps.process import settings_env
from spark_apps.lake import views
from spark_apps.lake.tables import ensure_table, table_path
from spark_apps.lake.views.transforms import (
    has_timestamp,
    transform_from_micros,
    transform_to_micros,
)
from tests.runtimes import REPO_ROOT

pytest.importorskip("delta")

VIEW = registry.view("page_clicks_hourly")
SOURCE = registry.table(VIEW.source)


@pytest.fixture
def lake(settings, tmp_path):
    """Settings whose tables live under this test's own directory."""
    return settings.with_overrides(runtime_dir=tmp_path / "runtime")


def clicks(spark, lake, *rows):
    """Append ``(click_id, user_id, event_time)`` clicks on page ``home`` to the view's source.
    The times are aware UTC datetimes, which PySpark converts without the local zone."""
    schema = SOURCE.schema.spark()
    values = [
        {"click_id": c, "page_id": "home", "user_id": u, "event_time": t, "event_date": t.date()}
        for c, u, t in rows
    ]
    frame = spark.createDataFrame([tuple(v.get(n) for n in schema.names) for v in values], schema)
    frame.write.format("delta").mode("append").save(table_path(lake, SOURCE.name))


def refresh_in_berlin(lake) -> subprocess.CompletedProcess:
    """``python -m spark_apps.lake.views --view page_clicks_hourly`` with ``TZ=Europe/Berlin``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADLAKE_")}
    env |= settings_env(lake)
    env |= {
        "TZ": "Europe/Berlin",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")])),
        # A short-lived driver gains nothing from the JIT's optimizing compiler (as tests/faults).
        "JDK_JAVA_OPTIONS": "-XX:TieredStopAtLevel=1",
    }
    return subprocess.run(
        [sys.executable, "-m", "spark_apps.lake.views", "--view", VIEW.name],
        env=env,
        cwd=REPO_ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )


def at(hour, minute):
    return datetime(2026, 10, 25, hour, minute, tzinfo=UTC)


def test_incremental_refresh_in_a_berlin_driver_across_the_dst_fall_back(spark, lake):
    ensure_table(spark, lake, SOURCE)
    # 00:30Z and 01:30Z: both 02:30 in Berlin, once in CEST and once in CET.
    clicks(spark, lake, ("k1", "u1", at(0, 30)), ("k2", "u2", at(1, 30)))
    assert views.full_refresh(spark, lake, VIEW).mode == "full"
    # 00:40Z and 01:40Z: both 02:40 in Berlin; each adds to its own hour's group.
    clicks(spark, lake, ("k3", "u3", at(0, 40)), ("k4", "u1", at(1, 40)))
    started = datetime.now(UTC)

    done = refresh_in_berlin(lake)

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"{VIEW.name}: incremental v1→v2" in done.stdout, done.stdout
    assert views.verify(spark, lake, VIEW) == []
    text = [F.col(c).cast("string").alias(c) for c in ("hour", "first_click", "last_click")]
    assertDataFrameEqual(
        spark.read.format("delta")
        .load(table_path(lake, VIEW.name))
        .select("page_id", *text, "clicks", "users"),
        spark.createDataFrame(
            [
                ("home", "2026-10-25 00:00:00", "2026-10-25 00:30:00", "2026-10-25 00:40:00", 2, 2),
                ("home", "2026-10-25 01:00:00", "2026-10-25 01:30:00", "2026-10-25 01:40:00", 2, 2),
            ],
            "page_id string, hour string, first_click string, last_click string, clicks long, "
            "users long",
        ),
    )
    # The Berlin driver recorded its refresh at the instant it ran (not its UTC wall clock read
    # in Berlin's zone, an hour or two early, older than the full refresh's row): compared as
    # epoch seconds, no datetime leaves Spark.
    progress = spark.read.format("delta").load(table_path(lake, views.PROGRESS_TABLE))
    refreshed = {
        r.source_version: r.seconds
        for r in progress.filter(F.col("view") == VIEW.name)
        .select("source_version", F.unix_seconds("refreshed_at").alias("seconds"))
        .collect()
    }
    assert refreshed[2] > refreshed[1]
    assert 0 <= refreshed[2] - started.timestamp() < 300, refreshed


def test_timestamps_go_through_the_driver_as_micros_and_come_back_exact(spark):
    # 00:30Z and 01:30Z of the fall-back night, at the top level and nested, NULLs too.
    a, b = "timestamp_micros(1792888200000000)", "timestamp_micros(1792891800000000)"
    df = spark.sql(
        f"SELECT * FROM VALUES (1, {a}, named_struct('t', {b}, 'n', 1), array({a}, {b}), "
        f"map('k', {b}), timestamp_ntz'2026-10-25 02:30:00'), "
        "(2, NULL, NULL, array(CAST(NULL AS timestamp)), NULL, NULL) AS t(id, t, s, a, m, ntz)"
    )
    shipped = transform_to_micros(df)
    assert not has_timestamp(shipped.schema), shipped.schema.simpleString()

    back = transform_from_micros(
        spark.createDataFrame(shipped.collect(), shipped.schema), df.schema
    )

    assert back.schema.simpleString() == df.schema.simpleString()
    as_json = F.to_json(F.struct("*")).alias("row")
    assert sorted(r.row for r in back.select(as_json).collect()) == sorted(
        r.row for r in df.select(as_json).collect()
    )
