"""Tests of the incremental materialized-view engine (``spark_apps/lake/views/``).

Each test gets its own runtime directory (``lake`` fixture), declares its own ``View`` over a
small source table with Change Data Feed on, changes the source with Delta DML and refreshes.
Expected views are written out by hand (or, in the randomized test, computed in plain Python from
a model of the source rows), never with the engine.
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta

import pytest
from pyspark.sql import types as T
from pyspark.testing import assertDataFrameEqual

from adlake import registry
from adlake.registry import Aggregate, View
from spark_apps.lake import views
from spark_apps.lake.tables import create_table, ensure_table, merge_into, table_path

pytest.importorskip("delta")

SOURCE = "test_impressions"
SOURCE_SCHEMA = T.StructType(
    [
        T.StructField("id", T.LongType()),
        T.StructField("campaign", T.StringType()),
        T.StructField("ts", T.TimestampType()),
        T.StructField("price", T.DoubleType()),
        T.StructField("user", T.StringType()),
        T.StructField("qty", T.IntegerType()),
    ]
)
T0 = datetime(2026, 11, 21, 10, 0)

# Every aggregate kind over one grouping key.
VIEW = View(
    "test_campaigns",
    SOURCE,
    ("campaign",),
    (
        Aggregate("n", "count"),
        Aggregate("spend", "sum", "price"),
        Aggregate("low", "min", "price"),
        Aggregate("high", "max", "price"),
        Aggregate("avg_price", "avg", "price"),
        Aggregate("users", "approx_distinct", "user"),
    ),
)
# What a test compares: the keys, the visible aggregates and the group's row count.
SHOWN = (
    "campaign string, n long, spend double, low double, high double, avg_price double, "
    "users long, __count long"
)


@pytest.fixture
def lake(settings, tmp_path):
    """Settings whose tables live under this test's own directory."""
    return settings.with_overrides(runtime_dir=tmp_path / "runtime")


def create_source(spark, lake, rows, name=SOURCE):
    path = table_path(lake, name)
    create_table(spark, path, SOURCE_SCHEMA, properties={"delta.enableChangeDataFeed": "true"})
    if rows:
        insert(spark, path, rows)
    return path


def insert(spark, path, rows):
    spark.createDataFrame(rows, SOURCE_SCHEMA).write.format("delta").mode("append").save(path)


def sql(spark, statement, path):
    spark.sql(statement.replace("SRC", f"delta.`{path}`"))


def shown(spark, lake, view=VIEW):
    cols = [*view.keys, *(a.name for a in view.aggregates), views.COUNT]
    return spark.read.format("delta").load(table_path(lake, view.name)).select(*cols)


def expect(spark, rows, schema=SHOWN):
    return spark.createDataFrame(rows, schema)


def merge_counts(report):
    return {
        k: report.merge[k] for k in ("num_inserted_rows", "num_updated_rows", "num_deleted_rows")
    }


def row(id, campaign, price, user, minutes=0, qty=1):
    return (id, campaign, T0 + timedelta(minutes=minutes), price, user, qty)


# The starting source of the unit cases: c1 has prices 2 and 5, c2 has 4 and a NULL price.
START = [
    row(1, "c1", 2.0, "u1"),
    row(2, "c1", 5.0, "u2"),
    row(3, "c2", 4.0, "u1"),
    row(4, "c2", None, "u3"),
]
START_VIEW = [("c1", 2, 7.0, 2.0, 5.0, 3.5, 2, 2), ("c2", 2, 4.0, 4.0, 4.0, 4.0, 2, 2)]


def started(spark, lake):
    path = create_source(spark, lake, START)
    assert views.refresh(spark, lake, VIEW).mode == "full"
    return path


# -- layout -------------------------------------------------------------------------------------


def test_view_columns_keys_then_aggregates_then_hidden_helpers():
    assert views.view_columns(VIEW) == [
        "campaign",
        "n",
        "spend",
        "low",
        "high",
        "avg_price",
        "users",
        "__count",
        "__cnt_spend",
        "__sum_avg_price",
        "__cnt_avg_price",
        "__hll_users",
    ]


# -- one change at a time -----------------------------------------------------------------------


def test_first_refresh_is_full(spark, lake):
    create_source(spark, lake, START)

    report = views.refresh(spark, lake, VIEW)

    assert (report.mode, report.from_version, report.to_version) == ("full", None, 1)
    assertDataFrameEqual(shown(spark, lake), expect(spark, START_VIEW))
    assert views.recorded_version(spark, lake, VIEW) == 1
    # Nothing changed since: nothing to do.
    assert views.refresh(spark, lake, VIEW).mode == "up_to_date"


def test_insert_adds_to_existing_groups_and_creates_new_ones(spark, lake):
    path = started(spark, lake)
    # c1 gets a new minimum and a known user; c3 is new; c4 has only a NULL price: its sum,
    # min, max and avg are NULL, as SQL's.
    insert(
        spark, path, [row(5, "c1", 1.0, "u1"), row(6, "c3", 3.0, "u4"), row(7, "c4", None, "u5")]
    )

    report = views.refresh(spark, lake, VIEW)

    assert (report.mode, report.change_rows, report.groups_touched, report.groups_recomputed) == (
        "incremental",
        3,
        3,
        0,
    )
    assert merge_counts(report) == {
        "num_inserted_rows": 2,
        "num_updated_rows": 1,
        "num_deleted_rows": 0,
    }
    assertDataFrameEqual(
        shown(spark, lake),
        expect(
            spark,
            [
                ("c1", 3, 8.0, 1.0, 5.0, 8.0 / 3, 2, 3),
                ("c2", 2, 4.0, 4.0, 4.0, 4.0, 2, 2),
                ("c3", 1, 3.0, 3.0, 3.0, 3.0, 1, 1),
                ("c4", 1, None, None, None, None, 1, 1),
            ],
        ),
    )


def test_delete_subtracts_and_recomputes_min_max_and_distinct(spark, lake):
    path = started(spark, lake)
    # Row 2 holds c1's maximum (5.0) and its only u2: neither can be derived from the stored
    # values, so c1 is recomputed from the source.
    sql(spark, "DELETE FROM SRC WHERE id = 2", path)

    report = views.refresh(spark, lake, VIEW)

    assert (report.change_rows, report.groups_touched, report.groups_recomputed) == (1, 1, 1)
    assert merge_counts(report) == {
        "num_inserted_rows": 0,
        "num_updated_rows": 1,
        "num_deleted_rows": 0,
    }
    assertDataFrameEqual(
        shown(spark, lake), expect(spark, [("c1", 1, 2.0, 2.0, 2.0, 2.0, 1, 1), START_VIEW[1]])
    )


def test_update_of_a_value_subtracts_the_pre_image_and_adds_the_post_image(spark, lake):
    path = started(spark, lake)
    sql(spark, "UPDATE SRC SET price = 9.0 WHERE id = 3", path)  # c2: 4.0 → 9.0

    report = views.refresh(spark, lake, VIEW)

    # Pre-image and post-image: two change rows, one group.
    assert (report.change_rows, report.groups_touched, report.groups_recomputed) == (2, 1, 1)
    assert merge_counts(report) == {
        "num_inserted_rows": 0,
        "num_updated_rows": 1,
        "num_deleted_rows": 0,
    }
    assertDataFrameEqual(
        shown(spark, lake), expect(spark, [START_VIEW[0], ("c2", 2, 9.0, 9.0, 9.0, 9.0, 2, 2)])
    )


def test_update_moving_a_row_to_another_group(spark, lake):
    path = started(spark, lake)
    # Row 2 (5.0, u2) leaves c1 for c3, a group that did not exist.
    sql(spark, "UPDATE SRC SET campaign = 'c3' WHERE id = 2", path)

    report = views.refresh(spark, lake, VIEW)

    # c1 lost a row (recomputed); c3 only gained one (combined, not recomputed).
    assert (report.change_rows, report.groups_touched, report.groups_recomputed) == (2, 2, 1)
    assert merge_counts(report) == {
        "num_inserted_rows": 1,
        "num_updated_rows": 1,
        "num_deleted_rows": 0,
    }
    assertDataFrameEqual(
        shown(spark, lake),
        expect(
            spark,
            [
                ("c1", 1, 2.0, 2.0, 2.0, 2.0, 1, 1),
                START_VIEW[1],
                ("c3", 1, 5.0, 5.0, 5.0, 5.0, 1, 1),
            ],
        ),
    )


def test_group_whose_count_reaches_zero_is_deleted(spark, lake):
    path = started(spark, lake)
    sql(spark, "DELETE FROM SRC WHERE campaign = 'c1'", path)

    report = views.refresh(spark, lake, VIEW)

    assert (report.change_rows, report.groups_touched, report.groups_recomputed) == (2, 1, 1)
    assert merge_counts(report) == {
        "num_inserted_rows": 0,
        "num_updated_rows": 0,
        "num_deleted_rows": 1,
    }
    assertDataFrameEqual(shown(spark, lake), expect(spark, [START_VIEW[1]]))


def test_decomposable_view_never_reads_the_source_and_handles_null_keys(spark, lake):
    counts = View(
        "test_counts",
        SOURCE,
        ("campaign",),
        (
            Aggregate("n", "count"),
            Aggregate("spend", "sum", "price"),
            Aggregate("avg_qty", "avg", "qty"),
        ),
    )
    path = create_source(
        spark,
        lake,
        [
            row(1, "c1", 2.0, "u1", qty=1),
            row(2, None, 1.5, "u2", qty=4),
            row(3, None, 0.5, "u3", qty=5),
        ],
    )
    views.refresh(spark, lake, counts)
    sql(spark, "DELETE FROM SRC WHERE id IN (1, 2)", path)
    insert(spark, path, [row(4, None, None, "u4", qty=2)])

    report = views.refresh(spark, lake, counts)

    # Deletes only subtract: no group is recomputed. c1 reaches 0 and goes; the NULL campaign
    # is one group, matched null-safely (not inserted a second time).
    assert (report.change_rows, report.groups_touched, report.groups_recomputed) == (3, 2, 0)
    assert merge_counts(report) == {
        "num_inserted_rows": 0,
        "num_updated_rows": 1,
        "num_deleted_rows": 1,
    }
    assertDataFrameEqual(
        shown(spark, lake, counts),
        expect(
            spark,
            [(None, 2, 0.5, 3.5, 2)],
            "campaign string, n long, spend double, avg_qty double, __count long",
        ),
    )


def test_sum_of_values_all_deleted_is_null_again(spark, lake):
    path = started(spark, lake)
    sql(spark, "DELETE FROM SRC WHERE id = 3", path)  # c2 keeps only its NULL price

    views.refresh(spark, lake, VIEW)

    assertDataFrameEqual(
        shown(spark, lake), expect(spark, [START_VIEW[0], ("c2", 1, None, None, None, None, 1, 1)])
    )


def test_merge_with_the_same_txn_version_is_applied_once(spark, lake):
    started(spark, lake)
    path = table_path(lake, VIEW.name)
    before = views.latest_version(spark, path)
    # c1 gains one row (price 1.0, a known user), as a refresh to source version 7 would merge.
    state = spark.createDataFrame(
        [("c1", 3, 8.0, 1.0, 5.0, 8.0 / 3, 2, 3, 3, 8.0, 3)],
        "campaign string, n long, spend double, low double, high double, avg_price double, "
        "users long, __count long, __cnt_spend long, __sum_avg_price double, "
        "__cnt_avg_price long",
    ).crossJoin(
        spark.read.format("delta").load(path).filter("campaign = 'c1'").select("__hll_users")
    )

    first = views.merge_into_view(spark, path, VIEW, state, source_version=7)
    second = views.merge_into_view(spark, path, VIEW, state, source_version=7)

    assert first["num_updated_rows"] == 1
    assert second is None  # skipped by Delta: (view:test_campaigns, 7) is already in the log
    assert views.latest_version(spark, path) == before + 1
    assert views.committed_version(spark, lake, VIEW) == 7


# -- crashes ------------------------------------------------------------------------------------

CRASH_VIEW = View("test_crash", SOURCE, VIEW.keys, VIEW.aggregates)
REFERENCE_VIEW = View("test_reference", SOURCE, VIEW.keys, VIEW.aggregates)
# START after deleting row 2 and inserting row 5.
CHANGED_VIEW = [("c1", 2, 3.0, 1.0, 2.0, 1.5, 1, 2), ("c2", 2, 4.0, 4.0, 4.0, 4.0, 2, 2)]


def full_view(spark, lake, view):
    """All stored columns except the sketches, which compare by estimate (``users``)."""
    return spark.read.format("delta").load(table_path(lake, view.name)).drop("__hll_users")


@pytest.mark.parametrize("fail_at", ["before_merge", "after_merge"])
def test_rerun_after_a_crash_gives_the_uninterrupted_view(spark, lake, fail_at):
    path = create_source(spark, lake, START)
    for view in (CRASH_VIEW, REFERENCE_VIEW):
        views.refresh(spark, lake, view)
    sql(spark, "DELETE FROM SRC WHERE id = 2", path)
    insert(spark, path, [row(5, "c1", 1.0, "u1")])
    views.refresh(spark, lake, REFERENCE_VIEW)

    with pytest.raises(views.InjectedFailure):
        views.refresh(spark, lake, CRASH_VIEW, fail_at=fail_at)

    # The bookkeeping did not move; the view moved only if the MERGE committed.
    assert views.recorded_version(spark, lake, CRASH_VIEW) == 1
    assertDataFrameEqual(
        shown(spark, lake, CRASH_VIEW),
        expect(spark, CHANGED_VIEW if fail_at == "after_merge" else START_VIEW),
    )

    rerun = views.refresh(spark, lake, CRASH_VIEW)

    # After a committed MERGE the rerun has nothing left to apply (it only repairs the
    # progress table); before it, the rerun applies the change once.
    assert rerun.mode == ("up_to_date" if fail_at == "after_merge" else "incremental")
    assert views.recorded_version(spark, lake, CRASH_VIEW) == 3
    assertDataFrameEqual(shown(spark, lake, CRASH_VIEW), expect(spark, CHANGED_VIEW))
    assertDataFrameEqual(full_view(spark, lake, CRASH_VIEW), full_view(spark, lake, REFERENCE_VIEW))
    assert views.verify(spark, lake, CRASH_VIEW) == []


def test_crash_after_merge_then_more_source_changes_counts_each_change_once(spark, lake):
    path = create_source(spark, lake, START)
    views.refresh(spark, lake, VIEW)
    insert(spark, path, [row(5, "c1", 1.0, "u1")])  # v2
    with pytest.raises(views.InjectedFailure):
        views.refresh(spark, lake, VIEW, fail_at="after_merge")  # v2 merged, not recorded
    insert(spark, path, [row(6, "c1", 6.0, "u6")])  # v3, before the rerun

    rerun = views.refresh(spark, lake, VIEW)

    # The rerun starts from v2, which the view's last commit records, not from the progress
    # table's v1: row 5 is counted once.
    assert (rerun.from_version, rerun.to_version, rerun.change_rows) == (2, 3, 1)
    assert views.recorded_version(spark, lake, VIEW) == 3
    assertDataFrameEqual(
        shown(spark, lake), expect(spark, [("c1", 4, 14.0, 1.0, 6.0, 3.5, 3, 4), START_VIEW[1]])
    )


# -- randomized: every step equals a recomputation ---------------------------------------------

RANDOM_VIEW = View(
    "test_random",
    SOURCE,
    ("campaign", "day"),
    (
        Aggregate("n", "count"),
        Aggregate("spend", "sum", "price"),
        Aggregate("units", "sum", "qty"),
        Aggregate("low", "min", "price"),
        Aggregate("first_user", "min", "user"),
        Aggregate("last_seen", "max", "ts"),
        Aggregate("high", "max", "price"),
        Aggregate("avg_qty", "avg", "qty"),
        Aggregate("avg_price", "avg", "price"),
        Aggregate("users", "approx_distinct", "user"),
    ),
    key_exprs=(("day", "to_date(ts)"),),
)
RANDOM_SHOWN = (
    "campaign string, day date, n long, spend double, units long, low double, "
    "first_user string, last_seen timestamp, high double, avg_qty double, "
    "avg_price double, users long, __count long"
)


def random_row(rng, id):
    # Prices are multiples of 0.25, so sums of doubles are exact in any order; NULLs in every
    # aggregated column and in the key, so NULL handling is exercised too.
    return (
        id,
        rng.choice(["c1", "c2", "c3", None]),
        T0 + timedelta(hours=rng.choice([0, 5, 20, 30])),
        rng.choice([None, *(q / 4 for q in range(40))]),
        rng.choice([None, "u1", "u2", "u3", "u4", "u5"]),
        rng.choice([None, 1, 2, 3, 7]),
    )


def python_view(rows):
    """The expected view, computed in plain Python from the source rows (an oracle independent
    of the engine and of Spark's aggregates)."""
    groups = {}
    for _, campaign, ts, price, user, qty in rows.values():
        groups.setdefault((campaign, ts.date()), []).append((ts, price, user, qty))
    out = []
    for (campaign, day), members in groups.items():
        prices = [m[1] for m in members if m[1] is not None]
        qtys = [m[3] for m in members if m[3] is not None]
        users = [m[2] for m in members if m[2] is not None]
        out.append(
            (
                campaign,
                day,
                len(members),
                sum(prices) if prices else None,
                sum(qtys) if qtys else None,
                min(prices, default=None),
                min(users, default=None),
                max(m[0] for m in members),
                max(prices, default=None),
                sum(qtys) / len(qtys) if qtys else None,
                sum(prices) / len(prices) if prices else None,
                len(set(users)),
                len(members),
            )
        )
    return out


def upsert(spark, path, rng, rows, next_id):
    """One MERGE into the source: some rows deleted, some rewritten (new values, maybe another
    group), some inserted — every kind of change in one source version."""
    ids = rng.sample(sorted(rows), min(len(rows), rng.randint(1, 4)))
    deleted, rewritten = ids[: len(ids) // 2], ids[len(ids) // 2 :]
    new = [random_row(rng, next_id + i) for i in range(rng.randint(0, 2))]
    batch = (
        [(*rows[i], "D") for i in deleted]
        + [(*random_row(rng, i), "U") for i in rewritten]
        + [(*r, "I") for r in new]
    )
    schema = T.StructType([*SOURCE_SCHEMA.fields, T.StructField("op", T.StringType())])
    columns = [f"`{c}`" for c in SOURCE_SCHEMA.names]
    merge_into(
        spark,
        path,
        spark.createDataFrame(batch, schema),
        "t.id = s.id",
        "WHEN MATCHED AND s.op = 'D' THEN DELETE "
        f"WHEN MATCHED THEN UPDATE SET {', '.join(f'{c} = s.{c}' for c in columns)} "
        f"WHEN NOT MATCHED THEN INSERT ({', '.join(columns)}) "
        f"VALUES ({', '.join(f's.{c}' for c in columns)})",
    )
    for r in batch:
        if r[-1] == "D":
            del rows[r[0]]
        else:
            rows[r[0]] = r[:-1]
    return next_id + len(new)


def random_step(spark, path, rng, rows, next_id):
    """One MERGE, or one to three DML statements (inserts, updates incl. moves between groups,
    deletes), applied to the source and to the model ``rows``; returns the next free id."""
    if rows and rng.random() < 0.3:
        return upsert(spark, path, rng, rows, next_id)
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(["insert", "update", "delete"] if rows else ["insert"])
        if kind == "insert":
            new = [random_row(rng, next_id + i) for i in range(rng.randint(1, 4))]
            next_id += len(new)
            insert(spark, path, new)
            rows.update({r[0]: r for r in new})
        else:
            ids = rng.sample(sorted(rows), min(len(rows), rng.randint(1, 3)))
            id_list = ", ".join(map(str, ids))
            if kind == "delete":
                sql(spark, f"DELETE FROM SRC WHERE id IN ({id_list})", path)
                for i in ids:
                    del rows[i]
            else:
                _, campaign, ts, price, user, qty = random_row(rng, 0)
                column, value, literal = rng.choice(
                    [
                        (1, campaign, "NULL" if campaign is None else f"'{campaign}'"),
                        (2, ts, f"timestamp'{ts}'"),
                        (3, price, "NULL" if price is None else repr(price)),
                        (4, user, "NULL" if user is None else f"'{user}'"),
                        (5, qty, "NULL" if qty is None else str(qty)),
                    ]
                )
                name = SOURCE_SCHEMA.names[column]
                sql(spark, f"UPDATE SRC SET `{name}` = {literal} WHERE id IN ({id_list})", path)
                for i in ids:
                    rows[i] = tuple(value if c == column else v for c, v in enumerate(rows[i]))
    return next_id


# Each step is a refresh, a verify and a comparison (~10 s on 2 cores): 3 × 6 steps. The
# randomized run is make test-e2e's: the tests above hold each kind of change in make test.
RANDOM_SEEDS, RANDOM_STEPS = (11,), 6


@pytest.mark.e2e
@pytest.mark.parametrize("seed", RANDOM_SEEDS)
def test_random_changes_keep_the_view_equal_to_a_recomputation(spark, lake, seed):
    rng = random.Random(seed)
    rows = {r[0]: r for r in (random_row(rng, i) for i in range(8))}
    path = create_source(spark, lake, list(rows.values()))
    next_id = len(rows)
    views.refresh(spark, lake, RANDOM_VIEW)
    for step in range(RANDOM_STEPS):
        next_id = random_step(spark, path, rng, rows, next_id)

        report = views.refresh(spark, lake, RANDOM_VIEW)

        assert report.mode == "incremental", f"step {step}: {report}"
        assert views.verify(spark, lake, RANDOM_VIEW) == [], f"step {step}"
        assertDataFrameEqual(
            shown(spark, lake, RANDOM_VIEW), expect(spark, python_view(rows), RANDOM_SHOWN)
        )


# -- verify -------------------------------------------------------------------------------------


def test_verify_reports_a_group_that_differs(spark, lake):
    started(spark, lake)
    # Corrupt the view behind the engine's back: c1 counts one row too many.
    sql(
        spark,
        "UPDATE SRC SET n = 3, __count = 3 WHERE campaign = 'c1'",
        table_path(lake, VIEW.name),
    )

    differences = views.verify(spark, lake, VIEW)

    assert [(d.keys, d.columns, d.view["n"], d.expected["n"]) for d in differences] == [
        ({"campaign": "c1"}, ("__count", "n"), 3, 2)
    ]


def test_refresh_refuses_a_view_that_does_not_reflect_its_source(spark, lake):
    counts = View("test_counts", SOURCE, ("campaign",), (Aggregate("n", "count"),))
    path = create_source(spark, lake, START)
    views.refresh(spark, lake, counts)
    # c1 disappears from the view behind the engine's back; then one of its rows from the source.
    sql(spark, "DELETE FROM SRC WHERE campaign = 'c1'", table_path(lake, counts.name))
    sql(spark, "DELETE FROM SRC WHERE id = 1", path)

    with pytest.raises(views.ViewInconsistent, match="negative count.*--full-refresh"):
        views.refresh(spark, lake, counts)


# -- the registry's views -----------------------------------------------------------------------


def silver_rows(spark, table, rows):
    """Rows of a registry table from ``{field: value}`` dicts, unset fields NULL."""
    schema = table.schema.spark()
    return spark.createDataFrame([tuple(r.get(n) for n in schema.names) for r in rows], schema)


def test_registry_views_refresh_and_verify_through_main(spark, lake, capsys):
    d1, d2 = date(2026, 11, 21), date(2026, 11, 22)
    t1, t2 = datetime(2026, 11, 21, 10, 5), datetime(2026, 11, 21, 11, 30)
    sources = {
        "silver_ad_impressions": [
            {
                "impression_id": "i1",
                "campaign_id": "cA",
                "device_id": "d1",
                "win_price": 1.5,
                "event_time": t1,
                "event_date": d1,
            },
            {
                "impression_id": "i2",
                "campaign_id": "cA",
                "device_id": "d2",
                "win_price": 2.5,
                "event_time": t1,
                "event_date": d1,
            },
            {
                "impression_id": "i3",
                "campaign_id": "cB",
                "device_id": "d1",
                "win_price": 0.5,
                "event_time": t2,
                "event_date": d2,
            },
        ],
        "silver_page_clicks": [
            {
                "click_id": "k1",
                "page_id": "home",
                "user_id": "u1",
                "event_time": t1,
                "event_date": d1,
            },
            {
                "click_id": "k2",
                "page_id": "home",
                "user_id": "u2",
                "event_time": t2,
                "event_date": d1,
            },
            {
                "click_id": "k3",
                "page_id": "home",
                "user_id": "u1",
                "event_time": t1,
                "event_date": d1,
            },
        ],
        "silver_ad_requests": [
            {
                "request_id": "r1",
                "geo": "FR",
                "household_id": "h1",
                "floor_price": 0.25,
                "bid_count": 3,
                "event_time": t1,
                "event_date": d1,
            },
            {
                "request_id": "r2",
                "geo": "FR",
                "household_id": "h1",
                "floor_price": 0.75,
                "bid_count": 4,
                "event_time": t1,
                "event_date": d1,
            },
        ],
    }
    for name, rows in sources.items():
        table = registry.table(name)
        path = ensure_table(spark, lake, table)
        silver_rows(spark, table, rows).write.format("delta").mode("append").save(path)

    assert views.main(["--all", "--full-refresh"], settings=lake) == 0
    # One change per source: an impression deleted, a click inserted, a request's bids updated.
    sql(
        spark,
        "DELETE FROM SRC WHERE impression_id = 'i2'",
        table_path(lake, "silver_ad_impressions"),
    )
    silver_rows(
        spark,
        registry.table("silver_page_clicks"),
        [
            {
                "click_id": "k4",
                "page_id": "home",
                "user_id": "u3",
                "event_time": t1,
                "event_date": d1,
            }
        ],
    ).write.format("delta").mode("append").save(table_path(lake, "silver_page_clicks"))
    sql(
        spark,
        "UPDATE SRC SET bid_count = 8 WHERE request_id = 'r2'",
        table_path(lake, "silver_ad_requests"),
    )
    assert views.main(["--all"], settings=lake) == 0
    assert views.main(["--all", "--verify"], settings=lake) == 0

    out = capsys.readouterr().out
    assert out.count(": full v1") == 3 and out.count(": incremental v1→v2") == 3, out
    assert out.count("consistent with its source") == 3, out

    def view_table(name, *cols):
        return spark.read.format("delta").load(table_path(lake, name)).select(*cols)

    assertDataFrameEqual(
        view_table(
            "campaign_daily_totals",
            "campaign_id",
            "event_date",
            "impressions",
            "spend",
            "min_price",
            "max_price",
            "avg_price",
            "devices",
        ),
        spark.createDataFrame(
            [("cA", d1, 1, 1.5, 1.5, 1.5, 1.5, 1), ("cB", d2, 1, 0.5, 0.5, 0.5, 0.5, 1)],
            "campaign_id string, event_date date, impressions long, "
            "spend double, min_price double, max_price double, "
            "avg_price double, devices long",
        ),
    )
    assertDataFrameEqual(
        view_table(
            "page_clicks_hourly", "page_id", "hour", "clicks", "users", "first_click", "last_click"
        ),
        spark.createDataFrame(
            [
                ("home", datetime(2026, 11, 21, 10), 3, 2, t1, t1),
                ("home", datetime(2026, 11, 21, 11), 1, 1, t2, t2),
            ],
            "page_id string, hour timestamp, clicks long, users long, "
            "first_click timestamp, last_click timestamp",
        ),
    )
    assertDataFrameEqual(
        view_table(
            "household_reach_by_geo",
            "geo",
            "event_date",
            "requests",
            "households",
            "floor_total",
            "avg_bids",
        ),
        spark.createDataFrame(
            [("FR", d1, 2, 1, 1.0, 5.5)],
            "geo string, event_date date, requests long, households long, "
            "floor_total double, avg_bids double",
        ),
    )

    # A corrupted view fails --verify with a readable report.
    sql(
        spark,
        "UPDATE SRC SET requests = 5 WHERE geo = 'FR'",
        table_path(lake, "household_reach_by_geo"),
    )
    assert views.main(["--view", "household_reach_by_geo", "--verify"], settings=lake) == 1
    out = capsys.readouterr().out
    assert "household_reach_by_geo: 1 group(s) differ" in out
    assert "group (geo='FR', event_date=datetime.date(2026, 11, 21)): requests differ" in out


def test_full_refresh_at_the_version_the_view_records_rewrites_it(spark, lake):
    path = started(spark, lake)
    insert(spark, path, [row(5, "c1", 1.0, "u1")])
    assert views.refresh(spark, lake, VIEW).mode == "incremental"  # the view records v2
    sql(
        spark,
        "UPDATE SRC SET n = 9, __count = 9 WHERE campaign = 'c1'",
        table_path(lake, VIEW.name),
    )

    # Delta would skip an overwrite carrying the txnVersion the view already has: the full
    # refresh must go through all the same, and leave the record at v2.
    views.full_refresh(spark, lake, VIEW)

    assert views.committed_version(spark, lake, VIEW) == 2
    assert views.verify(spark, lake, VIEW) == []
    insert(spark, path, [row(6, "c2", 6.0, "u6")])
    report = views.refresh(spark, lake, VIEW)
    assert (report.mode, report.from_version, report.change_rows) == ("incremental", 2, 1)
    assertDataFrameEqual(
        shown(spark, lake),
        expect(
            spark, [("c1", 3, 8.0, 1.0, 5.0, 8.0 / 3, 2, 3), ("c2", 3, 10.0, 4.0, 6.0, 5.0, 3, 3)]
        ),
    )


def test_a_change_of_one_day_scans_and_rewrites_that_days_file_only(spark, lake):
    # The view's table is laid out in ranges of its time key (here the day): an hour's change
    # touches the files of its own days. Without that layout every file holds every day. (The
    # MERGE's filter on the touched days, which lets Delta skip the other files when it scans
    # for matches, shows in no metric of the commit; the result must be the same with it.)
    daily = View(
        "test_daily",
        SOURCE,
        ("campaign", "day"),
        (Aggregate("n", "count"),),
        key_exprs=(("day", "to_date(ts)"),),
    )
    days, campaigns = 12, ("c1", "c2", "c3")
    path = create_source(
        spark,
        lake,
        [
            row(d * 10 + c, name, 1.0, "u", minutes=24 * 60 * d)
            for d in range(days)
            for c, name in enumerate(campaigns)
        ],
    )
    assert views.refresh(spark, lake, daily).mode == "full"
    dst = table_path(lake, daily.name)
    files = spark.sql(f"DESCRIBE DETAIL delta.`{dst}`").first().numFiles
    assert files >= days // 2, f"the full refresh wrote {files} files for {days} days"

    insert(spark, path, [row(999, "c2", 2.0, "u", minutes=24 * 60 * 3)])
    report = views.refresh(spark, lake, daily)
    assert (report.mode, merge_counts(report)) == (
        "incremental",
        {"num_inserted_rows": 0, "num_updated_rows": 1, "num_deleted_rows": 0},
    )
    metrics = spark.sql(f"DESCRIBE HISTORY delta.`{dst}` LIMIT 1").first().operationMetrics
    assert metrics["numTargetFilesRemoved"] == "1"
    # The rewritten file holds the day's other campaigns at most (and its range's neighbours).
    assert int(metrics["numTargetRowsCopied"]) <= 2 * len(campaigns) - 1, metrics
    assert views.verify(spark, lake, daily) == []
