"""The registry's vocabulary: the types of its entries and the enumerations they share.

:mod:`adlake.registry` declares every topic, table, view, app and job with these types; the
gold-table modules (:mod:`adlake.catalog.gold`) declare their tables with them too, without importing
the registry that collects them. Standard library only, like the registry: DAG files read both at
parse time; :meth:`Schema.spark` imports PySpark only when called.

>>> schema("page_id:string", "clicks:long?").required
['page_id']
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

    from adlake.catalog.expectations import Rule

# JSON type of each neutral field type, as the generator writes and the validators check it.
# Timestamps travel as ISO-8601 UTC strings with milliseconds, e.g. "2026-11-21T23:40:44.123Z".
FIELD_TYPES = ("string", "timestamp", "long", "int", "double", "boolean", "date")

# Callback event types; gold counts each one (clicks, first_quartiles, ...) and the funnel's
# stages are CLICK and CONVERSION.
CLICK, CONVERSION = "click", "conversion"
CALLBACK_EVENT_TYPES = (
    CLICK,
    "first_quartile",
    "midpoint",
    "third_quartile",
    "complete",
    CONVERSION,
)
# The record types of attributed_events (the attribution app's output; see
# spark_apps.common.attribution.contract, which names each one).
RECORD_TYPES = (
    "attributed_impression",
    "attributed_callback",
    "request_closed",
    "orphan_impression",
    "orphan_callback",
)
# The fields that identify one attributed_events record (its topic's id fields): a record's type,
# its request and, where the type has them, its impression and callback (a request_closed record
# has neither, so they may be null). Batch and real-time attribution are compared by them.
ATTRIBUTED_EVENT_IDS = ("record_type", "request_id", "impression_id", "callback_id")
# A column of this name holds one of these values in every table that has it.
COLUMN_ENUMERATIONS: dict[str, tuple[str, ...]] = {
    "event_type": CALLBACK_EVENT_TYPES,
    "record_type": RECORD_TYPES,
}
# click_surge's tumbling event-time window, in seconds (surge_history's windows are this long).
SURGE_WINDOW_S = 5
# The generator's surge pages each get this many clicks/s on top of their share (its
# `surge_rate` default): a surge page's window holds about 40 × 5 = 200 clicks.
SURGE_CLICKS_PER_S = 40.0
# click_surge's default threshold (its `threshold` knob, and what gold surge_history's check
# expects): a window surges above this many clicks. Half a generated surge window, so the first
# run shows surges: at the local rate (`make up`, 200 events/s) the surge pages surge and no other
# page does (the most clicked gets about 64 clicks a window); from about 300 events/s the most
# clicked page surges too. A deployment sets its own (`make up SET="click_surge.threshold=N"`).
SURGE_THRESHOLD = round(SURGE_CLICKS_PER_S * SURGE_WINDOW_S / 2)


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    required: bool = True

    def __post_init__(self) -> None:
        if self.type not in FIELD_TYPES:
            raise ValueError(f"field {self.name!r}: type {self.type!r} not in {FIELD_TYPES}")


@dataclass(frozen=True)
class Schema:
    fields: tuple[Field, ...]

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]

    @property
    def required(self) -> list[str]:
        return [f.name for f in self.fields if f.required]

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"no field {name!r}; fields are {', '.join(self.names)}")

    def spark(self) -> StructType:
        """The Spark ``StructType`` of this schema (all fields nullable: validation, not the
        JSON parser, decides what a missing field means)."""
        from pyspark.sql import types as T

        spark_types = {
            "string": T.StringType(),
            "timestamp": T.TimestampType(),
            "long": T.LongType(),
            "int": T.IntegerType(),
            "double": T.DoubleType(),
            "boolean": T.BooleanType(),
            "date": T.DateType(),
        }
        return T.StructType([T.StructField(f.name, spark_types[f.type], True) for f in self.fields])


def schema(*spec: str) -> Schema:
    """``"name:type"`` or ``"name:type?"`` (optional) for each field."""
    fields = []
    for item in spec:
        name, typ = item.split(":")
        fields.append(Field(name, typ.rstrip("?"), required=not typ.endswith("?")))
    return Schema(tuple(fields))


@dataclass(frozen=True)
class Topic:
    name: str
    partitions: int
    key_field: str
    schema: Schema
    # The fields that identify one record, so duplicates can be recognised downstream.
    id_fields: tuple[str, ...]
    description: str = ""
    retention_ms: int = 7 * 24 * 3600 * 1000


@dataclass(frozen=True)
class Knob:
    """A setting of a streaming app that a user may change when starting it: a ``--name`` flag
    of the app (dashes for underscores) and a typed field of the app's Airflow trigger form."""

    name: str
    type: str  # "integer", "number", "string" or "boolean" (JSON Schema types, as Params use)
    default: int | float | str | bool | None  # None: the form may leave it empty
    description: str
    # An integer or number knob has both, finite: a value outside them (or NaN, infinite, a
    # boolean) is refused wherever one arrives: the form's schema, the apps' requests, the flags.
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.type in ("integer", "number"):
            lo, hi = self.minimum, self.maximum
            if not (_finite(lo) and _finite(hi) and lo <= hi):  # type: ignore[operator]
                raise ValueError(
                    f"knob {self.name}: a {self.type} knob needs a finite minimum and maximum, "
                    f"the minimum not above the maximum; got {lo} and {hi}"
                )
        if self.default is not None:
            self.parse(self.default)

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def parse(self, value: object) -> int | float | str | bool:
        """``value`` as the knob's type (from a string too, as a form or a flag gives it),
        checked against its range or choices; ValueError saying why, with the value and what is
        allowed (the caller names the knob).

        >>> Knob("n", "integer", 1, "", minimum=0, maximum=10).parse("7")
        7
        >>> Knob("n", "integer", 1, "", minimum=0, maximum=10).parse(11)
        Traceback (most recent call last):
        ...
        ValueError: 11 is out of range: allowed integers from 0 to 10
        >>> Knob("x", "number", 1.0, "", minimum=0.001, maximum=60).parse("nan")
        Traceback (most recent call last):
        ...
        ValueError: 'nan' is not a valid number: allowed numbers from 0.001 to 60
        """
        if self.type in ("integer", "number"):
            allowed = f"allowed {self.type}s from {_bound(self.minimum)} to {_bound(self.maximum)}"
            number = _number(value, self.type == "integer")
            if number is None:
                raise ValueError(f"{_shown(value)} is not a valid {self.type}: {allowed}")
            if not self.minimum <= number <= self.maximum:  # type: ignore[operator]
                raise ValueError(f"{_shown(value)} is out of range: {allowed}")
            return number
        if not isinstance(value, bool if self.type == "boolean" else str):
            raise ValueError(f"{_shown(value)} is not a valid {self.type}")
        if self.choices and value not in self.choices:
            raise ValueError(
                f"{_shown(value)} is not valid: allowed values are {', '.join(self.choices)}"
            )
        return value


def _finite(bound: object) -> bool:
    return isinstance(bound, (int, float)) and not isinstance(bound, bool) and math.isfinite(bound)


def _number(value: object, integer: bool) -> int | float | None:
    """``value`` as an int (``integer``) or a finite float; None for a boolean, NaN, an
    infinity, a fraction where an integer is wanted, an int too large for a float, or text that
    is none of these."""
    if isinstance(value, bool):
        return None
    try:
        if integer:
            if isinstance(value, float) and not value.is_integer():
                return None
            return int(value)  # type: ignore[call-overload]
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def _bound(bound: float | None) -> str:
    return str(int(bound)) if float(bound).is_integer() else repr(float(bound))  # type: ignore[arg-type]


def _shown(value: object) -> str:
    """``value``'s repr, cut short: a refusal names what it refused without echoing a page."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


TRIGGERS = ("realtime", "processing_time")
# What a user (or the app's DAG) can ask of a streaming app; see adlake.apps.
APP_ACTIONS = ("start", "stop", "restart", "status")


@dataclass(frozen=True)
class KnobRule:
    """A rule tying a streaming app's knobs together, or to its trigger: each knob may be in its
    range and the combination still one the app cannot run (it would exit at its start, and the
    supervisor restart it at every backoff). Declared on the app (``App.rules``) and checked
    wherever a combination is entered: the apps' requests before anything is recorded
    (``adlake.apps``), the app's own flags (``spark_apps.common.streaming.runner``).

    ``check(trigger, knobs)`` returns what is wrong, in words naming the knobs and values, or
    None; ``knobs`` holds every knob of the app, parsed.

    >>> rule = KnobRule("hi > lo", lambda trigger, k: None if k["hi"] > k["lo"] else "hi <= lo")
    >>> rule.check("realtime", {"hi": 1, "lo": 2})
    'hi <= lo'
    """

    description: str
    check: Callable[[str, Mapping[str, object]], str | None]


@dataclass(frozen=True)
class StateClose:
    """What waits in a streaming app's state, and when the watermark has closed all of it: once
    it passes its value now + ``window`` + ``delay`` (``adlake.latency.waiting_in_state``).

    ``window`` is how long a key stays open past its time; ``delay`` is the watermark's delay
    behind the newest time it follows (the app's ``withWatermark``). Each is seconds, or the name
    of the app's knob that gives them. ``holds`` says what waits, a format string with
    ``{window}``, ``{delay}`` (numbers) and ``{open_after}`` (the watermark minus the window: the
    keys still open started after it); ``closes_with`` says what must arrive for it to close.
    """

    window: float | str
    delay: float | str
    holds: str
    closes_with: str

    def seconds(self, value: float | str, knobs: Mapping[str, object], app: App) -> float:
        """``window`` or ``delay`` in seconds: itself, or its knob's value in ``knobs`` (the
        knob's default when absent)."""
        if isinstance(value, str):
            return float(knobs.get(value, app.knob(value).default))  # type: ignore[arg-type]
        return float(value)


# Knob values by name, e.g. (("threshold", 0),): each name a knob of the app, each value its type.
KnobValues = tuple[tuple[str, int | float | str | bool], ...]


@dataclass(frozen=True)
class TimerBurst:
    """Knob values under which every Real-Time Mode checkpoint boundary of a minutes-long
    benchmark run fires the app's event-time timers, where with its defaults none falls due that
    soon: the boundary matrix's timer-burst configurations (``bench.ops.boundary``), one per
    partition setting, each named ``<partitions>-<name>``."""

    name: str
    changes: str  # what the benchmark report calls it
    knobs: KnobValues


@dataclass(frozen=True)
class Benchmark:
    """What the operational benchmarks (``bench/ops``) ask of a streaming app. Every field is
    optional: without it the app is measured with its defaults, checked by the generic checks
    only and held to no goal of its own."""

    # Knob values of every measured run, so that every input makes an output whose latency can
    # be measured (click-surge with threshold 0 reports every window's count).
    knobs: KnobValues = ()
    # Whole-run p99 goals (ms) in Real-Time Mode at 1,000 events/s with the default checkpoint
    # interval, on 2 cores: of the latency suite's run (bench.ops.latency) and of the boundary
    # matrix's best configuration (bench.ops.boundary).
    suite_p99_ms: float | None = None
    boundary_p99_ms: float | None = None
    # Its p99 beside the lake's rounds over its p99 with the lake idle (bench.ops.beside), at most.
    beside_p99_ratio: float | None = None
    # The boundary matrix's runs with timers firing at every boundary; None: no such runs.
    burst: TimerBurst | None = None

    @property
    def all_knobs(self) -> KnobValues:
        """Every knob value it sets: the measured runs' and the timer bursts'."""
        return self.knobs + (self.burst.knobs if self.burst else ())


@dataclass(frozen=True)
class App:
    """A streaming app: everything the platform's tools know of it (its DAG and form, its
    lifecycle, status, latency probe and card on the Streaming apps page) comes from this entry;
    its query is its module's ``StreamingApp`` spec (``spark_apps.common.streaming.runner``)."""

    name: str
    runtime: str  # "ops" or "lake"
    module: str  # spark-submit entry point, "package.module" with a main(argv)
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    dlq: str | None = None
    description: str = ""
    default_trigger: str = "processing_time"
    knobs: tuple[Knob, ...] = ()
    # Trigger switches (old, new) Spark resumes on the same checkpoint, state included (measured:
    # see adlake.apps); any other switch starts a new checkpoint from the old one's committed
    # offsets, without the state.
    same_checkpoint_switches: tuple[tuple[str, str], ...] = ()
    # Knobs that pick a different stateful operator, whose checkpoint the other cannot resume.
    checkpoint_knobs: tuple[str, ...] = ()
    # Output record types (the ``record_type`` field) an event-time timer emits, not an arriving
    # event: late by design, the latency probe counts them apart.
    timer_driven: tuple[str, ...] = ()
    # What waits in its state and when it closes; None: the app keeps no such state.
    state: StateClose | None = None
    # Rules between its knobs (and its trigger) that a start must meet (KnobRule).
    rules: tuple[KnobRule, ...] = ()
    # What the benchmarks run it with and hold it to.
    bench: Benchmark = Benchmark()
    # Its Real-Time Mode checkpoint interval, seconds, unless app_rtm_interval_s sets one for
    # every app: how often the long-running batch commits (a crash replays up to one interval),
    # the watermark advances and event-time timers fire; each boundary stalls the query.
    rtm_interval_s: int = 30

    def __post_init__(self) -> None:
        knobs = {k.name for k in self.knobs}
        if self.default_trigger not in TRIGGERS:
            raise ValueError(
                f"app {self.name!r}: trigger {self.default_trigger!r} not in {TRIGGERS}"
            )
        for switch in self.same_checkpoint_switches:
            if len(switch) != 2 or not set(switch) <= set(TRIGGERS):
                raise ValueError(f"app {self.name!r}: switch {switch!r} is not two of {TRIGGERS}")
        named = [*self.checkpoint_knobs]
        if self.state is not None:
            named += [v for v in (self.state.window, self.state.delay) if isinstance(v, str)]
        named += [name for name, _ in self.bench.all_knobs]
        for name in named:
            if name not in knobs:
                raise ValueError(f"app {self.name!r}: no knob {name!r}; knobs are {sorted(knobs)}")
        for name, value in self.bench.all_knobs:
            try:
                self.knob(name).parse(value)
            except ValueError as error:
                raise ValueError(f"app {self.name!r}: benchmark knob {name}: {error}") from None

    def knob(self, name: str) -> Knob:
        return lookup("knob", {k.name: k for k in self.knobs}, name)

    def refusal(self, trigger: str, knobs: Mapping[str, object]) -> str | None:
        """What is wrong with running the app with ``trigger`` and ``knobs`` (every knob,
        parsed) under its rules (:class:`KnobRule`), or None when all of them hold."""
        for rule in self.rules:
            problem = rule.check(trigger, knobs)
            if problem:
                return problem
        return None


@dataclass(frozen=True)
class Table:
    name: str
    layer: str  # bronze, silver, gold, quarantine, quality
    sources: tuple[str, ...]  # the topics or tables it is built from
    partition_by: tuple[str, ...] = field(default=())
    description: str = ""
    schema: Schema | None = None
    # The columns that identify one row (silver: the event id; gold: the grouping keys).
    keys: tuple[str, ...] = ()
    # Silver and gold sources of views record their changes (Delta Change Data Feed).
    change_feed: bool = False


AGGREGATE_KINDS = ("count", "sum", "min", "max", "avg", "approx_distinct")


@dataclass(frozen=True)
class Aggregate:
    """One output column of a view: ``kind`` over source ``column`` (``count`` takes none)."""

    name: str
    kind: str
    column: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in AGGREGATE_KINDS:
            raise ValueError(
                f"aggregate {self.name!r}: kind {self.kind!r} not in {AGGREGATE_KINDS}"
            )
        if (self.kind == "count") != (self.column is None):
            raise ValueError(f"aggregate {self.name!r}: count takes no column, the others one")


@dataclass(frozen=True)
class View:
    """An incremental materialized view: ``source`` table grouped by ``keys``; ``key_exprs``
    may derive a key from source columns (a Spark SQL expression per key name)."""

    name: str
    source: str
    keys: tuple[str, ...]
    aggregates: tuple[Aggregate, ...]
    key_exprs: tuple[tuple[str, str], ...] = ()
    description: str = ""
    # Its hand-written quality rules, each with why it holds (the rules the catalog implies,
    # keys and counts, are derived: adlake.quality.rules).
    rules: tuple[Rule, ...] = ()

    @property
    def time_key(self) -> str:
        """The key changes arrive by: the last one, a date or an hour. The view's table is laid
        out in ranges of it, so an hour's events touch the files of their own dates only."""
        return self.keys[-1]


# Input topics get 4 partitions: Real-Time Mode needs one task slot per source partition plus
# -- scheduled jobs ------------------------------------------------------------------------------

SCHEDULES = ("hourly", "daily", "on_update", "maintenance")
# The lake chains: each of their jobs takes its run's data interval as --start/--end.
INTERVAL_SCHEDULES = ("hourly", "daily")


@dataclass(frozen=True)
class Job:
    """One scheduled Spark job: ``module`` (a ``main(argv)`` entry point) run with ``args`` by
    spark-submit on ``runtime``. ``reads`` and ``writes`` name tables (topics, for bronze's
    reads); the DAG factory turns them into task dependencies and Airflow Assets.

    ``hourly`` and ``daily`` jobs make the lake chains (a job may be in both: ``schedule`` is
    one schedule or a tuple of them): each takes its data interval as ``--start/--end`` and
    writes it idempotently, so a rerun or an Airflow backfill gives the same tables.
    ``on_update`` jobs run when a table they read is updated; they catch up to its latest state
    (an asset-triggered run has no data interval) and take none.
    """

    name: str
    module: str
    runtime: str
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    schedule: str | tuple[str, ...]
    args: tuple[str, ...] = ()
    description: str = ""
    # Every job writes idempotently (partition replace, insert-if-absent MERGE, a view's
    # versioned MERGE), so a retried attempt is safe.
    retries: int = 2
    # A quality gate validates the tables it reads (spark_apps.lake.quality): it runs right after
    # their writer, and what depends on them waits for it (its `error` expectations passing).
    gate: bool = False
    # Fields of the DAG's trigger form, each passed to the job as its flag (a run the form did
    # not start, e.g. asset-triggered, takes the defaults). Only for a job that owns its DAG.
    params: tuple[Knob, ...] = ()

    def __post_init__(self) -> None:
        for schedule in self.schedules:
            if schedule not in SCHEDULES:
                raise ValueError(f"job {self.name!r}: schedule {schedule!r} not in {SCHEDULES}")

    @property
    def schedules(self) -> tuple[str, ...]:
        return (self.schedule,) if isinstance(self.schedule, str) else self.schedule

    def runs(self, schedule: str) -> bool:
        return schedule in self.schedules

    @property
    def takes_interval(self) -> bool:
        return any(s in INTERVAL_SCHEDULES for s in self.schedules)


def lookup(kind: str, mapping: dict, name: str):
    """``mapping[name]``, or a KeyError that lists what is registered."""
    try:
        return mapping[name]
    except KeyError:
        raise KeyError(
            f"unknown {kind} {name!r}; registered {kind}s: {', '.join(mapping)}"
        ) from None
