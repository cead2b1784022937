"""``airflow backfill create`` of ``lake_daily`` on a real Airflow: the session's SQLite metadata
DB, a real ``airflow scheduler`` (LocalExecutor) and the ``airflow api-server`` its task runners
report to, every task a real spark-submit.

Silver is written here, three hours across midnight (2026-11-21 22:00 to 2026-11-22 01:00) of
requests, impressions, callbacks, page clicks and surges, with chains that cross midnight; the
topics of a broker of this test are empty, so bronze and silver find nothing new and gold reads
this silver. Then:

1. the original hourly runs: one ``lake_hourly`` ``dag.test()`` per hour (gold only; bronze and
   silver would find nothing), which rebuild the hour tables' hours;
2. a backfill of ``lake_daily`` over both days, run by the scheduler: each day computed once
   (one commit per gold table and day), the hour tables equal to what the hourly runs wrote,
   row for row, and the day tables built;
3. the same backfill again, latest day first: both completed runs rerun, each day's slice of
   every gold table found unchanged by its memo (``spark_apps.lake.unchanged``), so no gold table
   gets a new Delta version and not one row changes.

The gold tables are also checked against totals counted from the silver rows written here, so a
chain that rebuilt too little fails even when every run agrees.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import time

import pytest

from adlake import registry
from adlake.airflow import factory
from adlake.local import platform
from adlake.local.kafka import free_port, scratch_broker
from tests.conftest import private_settings
from tests.dags.conftest import DAGS_DIR, task_env
from tests.spark_apps.lake.test_transforms import at, d, silver
from tests.support.airflow_daemons import (
    AIRFLOW,
    Daemons,
    execution_api_up,
    scheduler_env,
    start_execution_api,
    wait_for,
)

# 12 to 19 minutes on 2 cores (15 spark-submits and a real scheduler): the e2e tier, run by
# `make test-e2e`, not by `make test` (README, "Tests").
pytestmark = pytest.mark.e2e

UTC = dt.UTC
HOUR = dt.timedelta(hours=1)
# The interval starts of the hours silver spans: two on the 21st, one on the 22nd.
HOURS = [
    dt.datetime(2026, 11, 21, 22, tzinfo=UTC),
    dt.datetime(2026, 11, 21, 23, tzinfo=UTC),
    dt.datetime(2026, 11, 22, 0, tzinfo=UTC),
]
DAY = dt.timedelta(days=1)
DAYS = [dt.datetime(2026, 11, 21, tzinfo=UTC), dt.datetime(2026, 11, 22, tzinfo=UTC)]
GOLD = [t.name for t in registry.TABLES.values() if t.layer == "gold"]
BACKFILL_TIMEOUT_S = 1200  # a loaded 2-core machine; idle, a backfill run takes about a minute


def _requests():
    return [
        {"request_id": r, "event_time": t}
        for r, t in [
            ("r1", at("22:10:00")),
            ("r2", at("23:30:00")),
            ("r3", at("23:59:50")),
            ("r4", at("23:59:58")),
            ("r5", at("00:30:00", 22)),
            ("r6", at("00:45:00", 22)),
        ]
    ]


def _impressions():
    return [
        {
            "impression_id": i,
            "request_id": r,
            "campaign_id": c,
            "creative_id": f"{c}-a",
            "event_time": t,
            "device_id": "dev",
            "win_price": 1.0,
        }
        for i, r, c, t in [
            ("i1", "r1", "c1", at("22:10:01")),
            ("i2", "r2", "c2", at("23:30:01")),
            ("i3", "r3", "c1", at("23:59:55")),
            ("i4", "r4", "c2", at("00:00:02", 22)),  # its request is on the 21st
            ("i5", "r5", "c1", at("00:30:01", 22)),
        ]
    ]


def _callbacks():
    return [
        {"callback_id": cb, "impression_id": i, "request_id": r, "event_type": e, "event_time": t}
        for cb, i, r, e, t in [
            ("cb1", "i1", "r1", "click", at("22:11:00")),
            ("cb2", "i1", "r1", "conversion", at("22:12:00")),
            ("cb3", "i2", "r2", "first_quartile", at("23:30:20")),
            ("cb4", "i3", "r3", "click", at("00:02:00", 22)),  # the 22nd's click of the 21st's i3
            ("cb5", "i4", "r4", "complete", at("00:00:30", 22)),
            ("cb6", "i5", "r5", "click", at("00:40:00", 22)),
        ]
    ]  # past the window: no campaign's


def _clicks():
    return [
        {"click_id": k, "page_id": p, "event_time": t, "user_id": u}
        for k, p, t, u in [
            ("k1", "home", at("22:05:00"), "u1"),
            ("k2", "home", at("22:05:30"), "u2"),
            ("k3", "news", at("23:59:59"), "u1"),
            ("k4", "news", at("00:00:01", 22), "u1"),
            ("k5", "home", at("00:30:00", 22), "u3"),
        ]
    ]


def _surges():
    # A window reported twice as its count grew: gold keeps the highest count.
    return [
        {
            "page_id": "home",
            "window_start": start,
            "window_end": start + dt.timedelta(seconds=5),
            "click_count": n,
            "max_event_time": start,
            "source_kafka_ts": start,
        }
        for start, n in [(at("23:59:55"), 6), (at("23:59:55"), 7), (at("00:30:00", 22), 9)]
    ]


def write_silver(spark, settings) -> None:
    from spark_apps.lake.tables import ensure_table, table_path

    for topic, rows in [
        ("ad_requests", _requests()),
        ("ad_impressions", _impressions()),
        ("ad_callbacks", _callbacks()),
        ("page_clicks", _clicks()),
        ("page_surges", _surges()),
    ]:
        table = registry.table(f"silver_{topic}")
        ensure_table(spark, settings, table)
        rows = [{**row, "offset": n} for n, row in enumerate(rows)]
        (
            silver(spark, topic, rows)
            .write.format("delta")
            .mode("append")
            .save(table_path(settings, table))
        )


# -- Airflow's processes ---------------------------------------------------------------------


def backfill_create(env: dict[str, str], first: dt.datetime, last: dt.datetime, *extra: str) -> int:
    """``airflow backfill create`` of ``lake_daily`` from the day ``first`` to the day ``last``
    (both included: they are the logical dates, the interval starts, of the runs), as the
    runbook says to run it (:func:`adlake.local.platform.backfill_args`); returns the
    backfill's id."""
    from airflow.models.backfill import Backfill
    from airflow.utils.session import create_session
    from sqlalchemy import select

    done = subprocess.run(
        [AIRFLOW, *platform.backfill_args(first, last), *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    with create_session() as session:
        return session.scalar(
            select(Backfill.id)
            .where(Backfill.dag_id == factory.DAILY_DAG_ID)
            .order_by(Backfill.id.desc())
            .limit(1)
        )


def wait_backfill(backfill_id: int, daemons: Daemons) -> dict[dt.datetime, object]:
    """Until the scheduler marks the backfill complete; its runs by data interval start, each
    checked to have succeeded with every task."""
    from airflow.models.backfill import Backfill
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from airflow.utils.state import DagRunState, TaskInstanceState
    from sqlalchemy import select

    def runs():
        with create_session() as session:
            return {
                r.data_interval_start: (
                    r.run_id,
                    r.state,
                    r.run_type,
                    r.data_interval_end,
                    {ti.task_id: ti.state for ti in r.task_instances},
                )
                for r in session.scalars(select(DagRun).where(DagRun.backfill_id == backfill_id))
            }

    def completed():
        with create_session() as session:
            return session.get(Backfill, backfill_id).completed_at is not None

    def details():
        return f"runs: {runs()}\nscheduler log:\n{daemons.tail('scheduler')}"

    wait_for(completed, BACKFILL_TIMEOUT_S, f"backfill {backfill_id} complete", details)
    out = runs()
    for start, (run_id, state, run_type, end, tis) in out.items():
        assert state == DagRunState.SUCCESS and run_type == "backfill", (
            run_id,
            state,
            tis,
            details(),
        )
        assert end - start == DAY
        assert set(tis.values()) == {TaskInstanceState.SUCCESS}, (run_id, tis)
    return out


# -- the gold tables -------------------------------------------------------------------------


def snapshot(spark, settings, tables=GOLD) -> dict[str, list]:
    """Gold tables' rows, sorted (a multiset: a row written twice shows twice)."""
    from spark_apps.lake.tables import read_table

    return {
        name: sorted((tuple(r) for r in read_table(spark, settings, name).collect()), key=repr)
        for name in tables
    }


def versions(spark, settings) -> dict[str, int]:
    from spark_apps.lake.tables import table_path

    return {
        name: spark.sql(f"DESCRIBE HISTORY delta.`{table_path(settings, name)}` LIMIT 1").collect()[
            0
        ]["version"]
        for name in GOLD
    }


def check_against_silver(spark, settings) -> None:
    """Totals counted from the silver rows above, by hand: every day of silver is in gold, once,
    with the click after midnight counted for the impression before it."""
    from spark_apps.lake.tables import read_table

    def totals(table: str, keys: list[str], value: str, where: str = "true") -> dict:
        rows = read_table(spark, settings, table).where(where).groupBy(*keys).sum(value).collect()
        return {tuple(r[:-1]): r[-1] for r in rows}

    assert totals("page_traffic", ["event_date"], "clicks") == {(d(21),): 3, (d(22),): 2}
    assert totals("surge_history", ["event_date"], "click_count") == {(d(21),): 7, (d(22),): 9}
    assert totals("campaign_delivery", ["campaign_id", "event_date"], "impressions") == {
        ("c1", d(21)): 2,
        ("c2", d(21)): 1,
        ("c2", d(22)): 1,
        ("c1", d(22)): 1,
    }
    assert totals("campaign_delivery", ["campaign_id", "event_date"], "clicks") == {
        ("c1", d(21)): 1,
        ("c2", d(21)): 0,
        ("c2", d(22)): 0,
        ("c1", d(22)): 1,
    }
    day = totals("attribution_funnel", ["event_date"], "requests", "campaign_id = '*'")
    assert day == {(d(21),): 4, (d(22),): 2}
    assert totals("attribution_funnel", ["event_date"], "clicks", "campaign_id = '*'") == {
        (d(21),): 1,
        (d(22),): 2,
    }
    # Every request is a request_closed record of the batch attribution (none in real time).
    assert totals(
        "attribution_reconciliation",
        ["event_date"],
        "missing_in_realtime",
        "record_type = 'request_closed'",
    ) == {(d(21),): 4, (d(22),): 2}


# -- the test --------------------------------------------------------------------------------


@pytest.fixture
def lake(tmp_path, spark, airflow_db):
    """Settings of this test with a broker of its own (empty topics), silver written, and the
    environment Airflow's tasks must see set for the in-process ``dag.test()`` runs."""
    with scratch_broker(private_settings(tmp_path / "rt"), tmp_path / "rt") as settings:
        write_silver(spark, settings)
        with pytest.MonkeyPatch.context() as patch:
            for key, value in task_env(settings).items():
                patch.setenv(key, value)
            yield settings


def test_backfills_give_the_hourly_runs_gold_tables_and_change_nothing_when_repeated(
    lake, spark, tmp_path
):
    from airflow.models import DagBag
    from airflow.utils.state import DagRunState

    from spark_apps.lake.tables import ensure_table

    settings = lake
    started = time.monotonic()
    phases: dict[str, float] = {}

    def phase(name: str) -> None:
        phases[name] = time.monotonic() - started - sum(phases.values())

    port = free_port()
    # Runs come from the backfills only: no run of the latest hour, no asset-triggered view
    # run, no supervisor run (the scheduler still runs what is queued).
    env = scheduler_env(port, AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE="false")
    daemons = Daemons(tmp_path)
    try:
        # The task runners report to the execution API: up while the original runs go.
        start_execution_api(daemons, port, env)

        # 1. The original hourly runs, in this process. A manual run covers the last whole
        # hour before its logical date: 23:30 covers 22:00-23:00 (a logical date the backfill,
        # whose runs sit on their interval starts, does not take). Gold only: bronze and silver
        # would find nothing, and the quality gates judge rows, not their identity (the
        # backfills below run them).
        lake_dag = DagBag(str(DAGS_DIR)).dags[factory.LAKE_DAG_ID]
        for hour in HOURS:
            run = lake_dag.test(
                logical_date=hour + HOUR + dt.timedelta(minutes=30),
                mark_success_pattern="^(bronze|silver|quality_.*)$",
            )
            assert run.state == DagRunState.SUCCESS, hour
            assert (run.data_interval_start, run.data_interval_end) == (hour, hour + HOUR)
        phase("hourly runs")
        # The scheduler starts once no dag.test() run is left for it to take over.
        wait_for(
            lambda: execution_api_up(port), 300, "execution API", lambda: daemons.tail("api-server")
        )
        daemons.start("scheduler", ["scheduler"], env)
        hourly = snapshot(spark, settings, registry.GOLD_HOURLY)

        # 2. A backfill of both days, run by the scheduler: each gold table's day once.
        for name in GOLD:
            ensure_table(spark, settings, registry.table(name))
        before = versions(spark, settings)
        first = backfill_create(env, DAYS[0], DAYS[-1])
        runs = wait_backfill(first, daemons)
        assert sorted(runs) == DAYS
        after = versions(spark, settings)
        assert {t: after[t] - before[t] for t in GOLD} == {t: len(DAYS) for t in GOLD}
        assert snapshot(spark, settings, registry.GOLD_HOURLY) == hourly
        check_against_silver(spark, settings)
        daily = snapshot(spark, settings)
        phase("backfill 1")

        # 3. The same backfill, latest day first: both completed runs rerun; each day's slice
        # of every gold table is found unchanged (its memo: the same silver files, the same
        # code), so no table is written again and not one row changes.
        before = after
        second = backfill_create(env, DAYS[0], DAYS[-1], "--run-backwards")
        rerun = wait_backfill(second, daemons)
        assert sorted(rerun) == DAYS
        assert rerun[DAYS[0]][0] == runs[DAYS[0]][0]  # the same run, cleared and rerun
        after = versions(spark, settings)
        assert {t: after[t] - before[t] for t in GOLD} == dict.fromkeys(GOLD, 0)
        assert snapshot(spark, settings) == daily
        phase("backfill 2")
    finally:
        daemons.stop()
        print(
            f"\n[backfill test] {time.monotonic() - started:.0f}s: "
            + ", ".join(f"{k} {v:.0f}s" for k, v in phases.items())
            + f"; load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )
