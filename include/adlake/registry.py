"""The catalog's one way in: every Kafka topic, table, view, app and job of Adlake, and their
lookups. Code outside the catalog reads them here; the declarations live in
:mod:`adlake.catalog`, one module per kind:

* :mod:`adlake.catalog.types` — what an entry is (:class:`Topic`, :class:`Table`,
  :class:`View`, :class:`App`, :class:`Job`, their fields and knobs);
* :mod:`adlake.catalog.topics`, :mod:`~adlake.catalog.apps`, :mod:`~adlake.catalog.tables`
  (gold's from :mod:`adlake.catalog.gold`, one module per table), :mod:`~adlake.catalog.views`
  — the entries;
* :mod:`adlake.catalog.jobs` — the scheduled jobs, derived from the entries;
* :mod:`adlake.catalog.expectations` — the vocabulary of a quality rule; a rule lives on what it
  is about (a gold module's ``BUSINESS_RULES``, a view's ``rules``).

DAGs, Spark apps, the event generator, topic creation and the tests read the catalog; nothing
else names a topic, a table or a path. Schemas are declared in a neutral form (:class:`Field`
lists), so the catalog imports without PySpark (DAG files read it at parse time);
:meth:`Schema.spark` derives the one ``StructType`` for Spark code, lazily.

>>> topic("page_clicks").key_field, table("page_traffic").layer, view("page_clicks_hourly").time_key
('page_id', 'gold', 'hour')
"""

from __future__ import annotations

from adlake.catalog.apps import APPS, app, ops_apps, ttl_refusal
from adlake.catalog.jobs import GOLD_HOURLY, JOBS, MAINTENANCE_PARAMS, VIEW_MODE, job
from adlake.catalog.tables import (
    BRONZE_COORDINATES,
    BRONZE_SCHEMA,
    QUARANTINE_SCHEMA,
    SILVER_TOPICS,
    TABLES,
    silver_time_field,
    table,
)
from adlake.catalog.topics import (
    DLQ_SCHEMA,
    SCALED_TOPICS,
    TOPICS,
    PartitionSettings,
    input_partitions,
    partitions,
    topic,
)
from adlake.catalog.types import (
    AGGREGATE_KINDS,
    APP_ACTIONS,
    ATTRIBUTED_EVENT_IDS,
    CALLBACK_EVENT_TYPES,
    CLICK,
    COLUMN_ENUMERATIONS,
    CONVERSION,
    FIELD_TYPES,
    INTERVAL_SCHEDULES,
    RECORD_TYPES,
    SCHEDULES,
    SURGE_CLICKS_PER_S,
    SURGE_THRESHOLD,
    SURGE_WINDOW_S,
    TRIGGERS,
    Aggregate,
    App,
    Benchmark,
    Field,
    Job,
    Knob,
    KnobRule,
    KnobValues,
    Schema,
    StateClose,
    Table,
    TimerBurst,
    Topic,
    View,
    lookup,
    schema,
)
from adlake.catalog.views import VIEWS, view

__all__ = [
    "AGGREGATE_KINDS",
    "APPS",
    "APP_ACTIONS",
    "ATTRIBUTED_EVENT_IDS",
    "BRONZE_COORDINATES",
    "BRONZE_SCHEMA",
    "CALLBACK_EVENT_TYPES",
    "CLICK",
    "COLUMN_ENUMERATIONS",
    "CONVERSION",
    "DLQ_SCHEMA",
    "FIELD_TYPES",
    "GOLD_HOURLY",
    "INTERVAL_SCHEDULES",
    "JOBS",
    "MAINTENANCE_PARAMS",
    "QUARANTINE_SCHEMA",
    "RECORD_TYPES",
    "SCALED_TOPICS",
    "SCHEDULES",
    "SILVER_TOPICS",
    "SURGE_CLICKS_PER_S",
    "SURGE_THRESHOLD",
    "SURGE_WINDOW_S",
    "TABLES",
    "TOPICS",
    "TRIGGERS",
    "VIEWS",
    "VIEW_MODE",
    "Aggregate",
    "App",
    "Benchmark",
    "Field",
    "Job",
    "Knob",
    "KnobRule",
    "KnobValues",
    "PartitionSettings",
    "Schema",
    "StateClose",
    "Table",
    "TimerBurst",
    "Topic",
    "View",
    "app",
    "ops_apps",
    "input_partitions",
    "job",
    "lookup",
    "partitions",
    "schema",
    "silver_time_field",
    "table",
    "topic",
    "ttl_refusal",
    "view",
]
