"""The attribution rules in batch without a state server: each key's state held in memory.

In batch (``close_at_end_of_input``) every key is complete in one call: all its rows arrive
together, and it closes at their end, so no state outlives the call and no timer is set. Run by
``transformWithState``, the processor still pays a round trip to the JVM's state server for
every state read, write and clear (about 17 a key). Here the same processor
(:class:`~spark_apps.common.attribution.processor.AttributionProcessor`, the specification the
stream's Java port is held to as well) runs with state variables that are Python dicts, inside
``mapInArrow`` over the rows grouped by key (hash-partitioned, then sorted by it). The output is
the processor's by construction: the same code, over each key's rows, in the order it sorts
them itself; a differential test holds it to the ``transformWithState`` run and to the
reference rules.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterator
from typing import TYPE_CHECKING

from spark_apps.common.attribution.contract import INPUT_SCHEMA, OUTPUT_SCHEMA, AttributionConfig

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

_Input = namedtuple("_Input", INPUT_SCHEMA.names)


class _Value:
    """A ``ValueState`` of one key, in memory."""

    def __init__(self) -> None:
        self.value: tuple | None = None

    def get(self) -> tuple | None:
        return self.value

    def exists(self) -> bool:
        return self.value is not None

    def update(self, value: tuple) -> None:
        self.value = tuple(value)

    def clear(self) -> None:
        self.value = None


class _Map:
    """A ``MapState`` of one key, in memory."""

    def __init__(self) -> None:
        self.entries: dict[tuple, tuple] = {}

    def iterator(self) -> Iterator[tuple[tuple, tuple]]:
        return iter(list(self.entries.items()))

    def containsKey(self, key: tuple) -> bool:
        return tuple(key) in self.entries

    def getValue(self, key: tuple) -> tuple | None:
        return self.entries.get(tuple(key))

    def updateValue(self, key: tuple, value: tuple) -> None:
        self.entries[tuple(key)] = tuple(value)

    def clear(self) -> None:
        self.entries.clear()


class _Handle:
    """What the processor asks its handle for in batch: state variables, never a timer."""

    def getValueState(self, name: str, schema: object, ttl: object = None) -> _Value:
        return _Value()

    def getMapState(self, name: str, key: object, value: object, ttl: object = None) -> _Map:
        return _Map()

    def registerTimer(self, expiry_ms: int) -> None:
        raise AssertionError("a key closes at the end of its input in batch: no timer")

    def deleteTimer(self, expiry_ms: int) -> None:
        raise AssertionError("a key closes at the end of its input in batch: no timer")


class _EndOfInput:
    """The ``TimerValues`` of a batch call: no watermark (a batch closes every key at once)."""

    def getCurrentWatermarkInMs(self) -> int:
        return -1

    def getCurrentProcessingTimeInMs(self) -> int:
        return -1


def attribute_partition(
    batches: Iterator[pa.RecordBatch], config: AttributionConfig
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow``'s function: ``batches`` hold input rows with each key's rows contiguous;
    yields the processor's output for each key, a record batch per input batch."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    from spark_apps.common.attribution.processor import AttributionProcessor

    schema = to_arrow_schema(OUTPUT_SCHEMA)
    processor = AttributionProcessor(config)
    end = _EndOfInput()
    key: object = object()  # no key yet
    rows: list[_Input] = []
    out: list[tuple] = []

    def flush() -> None:
        if rows:
            processor.init(_Handle())  # the key's state: empty, in memory
            out.extend(processor.handleInputRows((key,), iter(rows), end))

    def emitted() -> pa.RecordBatch:
        columns = list(zip(*out, strict=True)) if out else [[] for _ in schema.names]
        out.clear()
        return pa.RecordBatch.from_arrays(
            [pa.array(c, type=f.type) for c, f in zip(columns, schema, strict=True)],
            schema=schema,
        )

    for batch in batches:
        columns = [batch.column(name).to_pylist() for name in INPUT_SCHEMA.names]
        request_ids = columns[INPUT_SCHEMA.names.index("request_id")]
        for i, values in enumerate(zip(*columns, strict=True)):
            if request_ids[i] != key:
                flush()
                key, rows = request_ids[i], []
            rows.append(_Input(*values))
        yield emitted()
    flush()
    yield emitted()


def transform_attribute_in_memory(events: DataFrame, config: AttributionConfig) -> DataFrame:
    """Processor input rows → the processor's output rows (:data:`OUTPUT_SCHEMA`), every key
    closed at the end of its input, in memory (see the module docstring)."""
    from pyspark.sql import functions as F

    if not config.close_at_end_of_input:
        raise ValueError("in memory, every key closes at the end of its input: batch only")
    grouped = (
        events.select(*INPUT_SCHEMA.names)
        .repartition(F.col("request_id"))
        .sortWithinPartitions("request_id")
    )
    return grouped.mapInArrow(lambda batches: attribute_partition(batches, config), OUTPUT_SCHEMA)
