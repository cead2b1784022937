"""The scheduled Spark jobs, derived from the other entries: bronze and silver over every topic,
gold over its models, a refresh and a quality gate per view, the gates of the chains, table
maintenance. The DAG factory turns them into tasks, dependencies and Assets."""

from __future__ import annotations

from adlake.catalog import gold
from adlake.catalog.tables import SILVER_TOPICS, TABLES
from adlake.catalog.topics import TOPICS
from adlake.catalog.types import Job, Knob, View, lookup
from adlake.catalog.views import VIEWS

# How a view DAG refreshes its view (a field of its trigger form; asset-triggered runs take the
# default): see spark_apps.lake.views.
VIEW_MODE = Knob(
    "mode",
    "string",
    "incremental",
    "incremental: apply the source's change feed; full-refresh: recompute the view "
    "(after ChangeFeedUnavailable, SourceRewound or ViewInconsistent); verify: "
    "compare with a recomputation, change nothing",
    choices=("incremental", "full-refresh", "verify"),
)

# The trigger form of table maintenance (spark_apps.lake.maintenance); a scheduled run takes
# the defaults.
MAINTENANCE_PARAMS = (
    Knob(
        "dry_run",
        "boolean",
        False,
        "list what would be compacted and removed, change nothing",
    ),
    Knob(
        "retention_hours",
        "integer",
        None,
        "VACUUM keeps files removed within this many hours; empty: the configuration's "
        "(ADLAKE_LAKE_RETENTION_HOURS). Less than any reader needs is refused",
        minimum=0,
        # ten years, the most ADLAKE_LAKE_RETENTION_HOURS takes
        maximum=10 * 365 * 24,
    ),
    Knob("tables", "string", "all", "comma-separated tables, or all"),
)

# The gold tables the hourly chain rebuilds: those of hour grain (the others are rebuilt daily).
GOLD_HOURLY: tuple[str, ...] = tuple(n for n in gold.NAMES if gold.model(n).GRAIN == gold.HOUR)


def _sources(tables: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(src for t in tables for src in TABLES[t].sources))


def view_refresh(v: View) -> Job:
    """A view's refresh, ``view_<name>``: run when its source is updated, it MERGEs the source's
    change feed into the view."""
    return Job(
        f"view_{v.name}",
        "spark_apps.lake.views",
        "lake",
        (v.source,),
        (v.name,),
        "on_update",
        args=("--view", v.name),
        params=(VIEW_MODE,),
        description=f"Incremental refresh of the view `{v.name}` (MERGE of the change feed of "
        f"`{v.source}`): {v.description}",
    )


def view_gate(v: View) -> Job:
    """A view's quality gate, ``quality_<name>``: its suite over the whole view after each
    refresh; it publishes the view."""
    return Job(
        f"quality_{v.name}",
        "spark_apps.lake.quality",
        "lake",
        (v.name,),
        ("dq_results",),
        "on_update",
        args=("--table", v.name),
        retries=1,
        gate=True,
        description=f"Great Expectations suite `{v.name}` over the whole view, its count "
        f"checked against `{v.source}` at the version the view reflects; results "
        f"to `dq_results` and Data Docs.",
    )


JOBS: dict[str, Job] = {
    j.name: j
    for j in [
        # Bronze and silver catch up whatever is new, in both chains (a run with nothing new
        # starts no query).
        Job(
            "bronze",
            "spark_apps.lake.bronze",
            "lake",
            tuple(TOPICS),
            tuple(t.name for t in TABLES.values() if t.layer == "bronze"),
            ("hourly", "daily"),
            description="Every topic → its bronze table, raw, with Kafka metadata (AvailableNow from "
            "the Kafka checkpoint: bronze catches up; the interval is logged only).",
        ),
        Job(
            "silver",
            "spark_apps.lake.silver",
            "lake",
            tuple(f"bronze_{name}" for name in SILVER_TOPICS),
            (*(f"silver_{name}" for name in SILVER_TOPICS), "quarantine"),
            ("hourly", "daily"),
            description="Bronze → typed, validated, deduplicated silver tables; failures to the "
            "quarantine table with the reason.",
        ),
        # One job, one Spark driver for every gold table of a chain: a driver's start costs more
        # than most tables' rebuild on this scale; each table is still its own Asset. The hourly
        # chain rebuilds the hour tables' hour, the daily one every table's day, once it is final.
        Job(
            "gold",
            "spark_apps.lake.gold",
            "lake",
            _sources(GOLD_HOURLY),
            GOLD_HOURLY,
            "hourly",
            args=("--tables", ",".join(GOLD_HOURLY)),
            description="Silver → the hour tables (" + ", ".join(GOLD_HOURLY) + "): the "
            "interval's hour is rebuilt from silver (read with the margin its rows need around "
            "it) and replaced in one commit.",
        ),
        Job(
            "gold_daily",
            "spark_apps.lake.gold",
            "lake",
            _sources(gold.NAMES),
            gold.NAMES,
            "daily",
            args=("--tables", ",".join(gold.NAMES)),
            description="Silver → every gold table (" + ", ".join(gold.NAMES) + "): the final "
            "day is rebuilt from silver, late events included, and replaced in one commit.",
        ),
        *[view_refresh(v) for v in VIEWS.values()],
        Job(
            "maintenance",
            "spark_apps.lake.maintenance",
            "lake",
            (),
            ("maintenance_history",),
            "maintenance",
            retries=1,
            params=MAINTENANCE_PARAMS,
            description="Every Delta table: OPTIMIZE where a partition holds more than one file, "
            "VACUUM of the files removed longer ago than the retention (refused, with the "
            "reader named, when a streaming checkpoint or a view still needs them), and a row "
            "per table in `maintenance_history`.",
        ),
        # Quality: one gate job per chain validates its gold tables in one Spark driver (in the
        # chain, after gold, over the run's interval; each table still passes or fails as its
        # own task, `quality_<table>`), and one per view (when the view is updated). An `error`
        # expectation that fails fails the table's task, so nothing downstream of the table
        # runs; one retry, for a transient Spark failure only (a data failure fails again).
        *[
            Job(
                name,
                "spark_apps.lake.quality",
                "lake",
                tables,
                ("dq_results",),
                schedule,
                args=("--tables", ",".join(tables)),
                retries=1,
                gate=True,
                description=f"Great Expectations suites of {', '.join(tables)} over the "
                f"interval's slice of each, in one Spark driver; results to `dq_results` and "
                f"Data Docs, and each table's verdict to its `quality_<table>` task.",
            )
            for name, tables, schedule in (
                ("quality_gold", GOLD_HOURLY, "hourly"),
                ("quality_gold_daily", gold.NAMES, "daily"),
            )
        ],
        *[view_gate(v) for v in VIEWS.values()],
    ]
}


def job(name: str) -> Job:
    return lookup("job", JOBS, name)
