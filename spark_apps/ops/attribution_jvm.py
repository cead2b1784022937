"""The attribution rules on the JVM engine: how Python hands the JVM processor its schemas and
calls it.

``spark_apps/ops/jvm/io/adlake/ops/AttributionProcessor.java`` is a port of the Python
:class:`~spark_apps.common.attribution.processor.AttributionProcessor` (same rules, same state
variables and schemas), compiled by ``make setup`` into the ops runtime's jar. The streaming app
runs it by default (``--engine jvm``) because a Python processor pays a socket round trip to the
JVM for every state read, write and timer: on 2 cores the Python engine tops out at about 740
rows/s with multi-second latency (README, "Benchmarks"). Both processors are pinned by the same
unit tests, run through each engine's ``TwsTester`` (:class:`JvmTwsTester` here), and by the same
randomized comparison with a reference implementation.

Every schema and every name the rules compare or emit (kinds, record types, the DLQ fields) is
declared once, in Python, and sent to the JVM as JSON
(:func:`~spark_apps.common.attribution.contract.contract_json`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from pyspark.sql import Row
from pyspark.sql.types import StructType

from adlake import registry
from adlake.config import OPS_APP_JAR
from spark_apps.common.attribution.contract import (
    INPUT_SCHEMA,
    OUTPUT_SCHEMA,
    AttributionConfig,
    contract_json,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# The app's --engine knob (registry): the JVM port or the Python processor.
ENGINES = registry.app("attribution").knob("engine").choices


class MissingJvmProcessor(RuntimeError):
    """The session has no ops app jar (``make setup`` builds it)."""


def _entry_point(spark: SparkSession):
    from py4j.java_gateway import JavaClass

    entry = spark._jvm.io.adlake.ops.Attribution
    if not isinstance(entry, JavaClass):  # py4j resolves an unknown class to a JavaPackage
        raise MissingJvmProcessor(
            "io.adlake.ops.Attribution is not on this session's classpath; run `make setup` "
            f"(it builds {OPS_APP_JAR} under the jar root) and use the ops runtime's session"
        )
    return entry


def transform_jvm(
    events: DataFrame,
    config: AttributionConfig,
    *,
    input_schema: StructType = INPUT_SCHEMA,
    output_schema: StructType = OUTPUT_SCHEMA,
    with_reject_key: bool = False,
    output_mode: str = "append",
) -> DataFrame:
    """``events`` (columns of ``input_schema``, plus ``reject_key`` when ``with_reject_key``)
    grouped by ``(request_id, reject_key)`` through the JVM processor; rows of
    ``output_schema``. Event-time timers fire on ``events``' watermark."""
    from pyspark.sql import DataFrame

    spark = events.sparkSession
    jdf = _entry_point(spark).transform(
        events._jdf,
        contract_json(input_schema, output_schema),
        config.window_ms,
        config.skew_ms,
        config.ttl_ms,
        config.close_at_end_of_input,
        with_reject_key,
        output_mode,
    )
    return DataFrame(jdf, spark)


def _tuple(values: list | None) -> tuple | None:
    return None if values is None else tuple(values)


class JvmTwsTester:
    """Spark's Scala ``TwsTester`` over the JVM processor, with the Python ``TwsTester``'s
    surface (``test``, ``setWatermark``, ``peekValueState``, ``peekMapState``), so one test
    suite pins both engines. Rows dropped behind the watermark are those whose Kafka
    timestamp is <= it, as in the Python tests. Rows cross py4j as one JSON string per call."""

    def __init__(
        self, spark: SparkSession, config: AttributionConfig, contract: str | None = None
    ) -> None:
        self._tester = _entry_point(spark).tester(
            contract or contract_json(), config.window_ms, config.skew_ms, config.ttl_ms
        )

    @staticmethod
    def _rows(text: str) -> list[Row]:
        return [Row(**dict(zip(OUTPUT_SCHEMA.names, values))) for values in json.loads(text)]

    def test(self, key: str, rows: list[Row]) -> list[Row]:
        return self._rows(self._tester.test(key, json.dumps([list(r) for r in rows])))

    def setWatermark(self, ms: int) -> list[Row]:
        return self._rows(self._tester.setWatermark(ms))

    def peekValueState(self, name: str, key: str) -> tuple | None:
        return _tuple(json.loads(self._tester.peekValueState(name, key)))

    def peekMapState(self, name: str, key: str) -> dict:
        return {_tuple(k): _tuple(v) for k, v in json.loads(self._tester.peekMapState(name, key))}
