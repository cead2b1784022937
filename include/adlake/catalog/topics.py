"""The Kafka topics: the apps' inputs and outputs and the dead-letter topics, their schemas, keys
and partitions.

>>> TOPICS["ad_impressions"].key_field
'request_id'
>>> [f.name for f in TOPICS["page_clicks"].schema.fields]
['click_id', 'page_id', 'event_time', 'user_id']
>>> topic("nope")
Traceback (most recent call last):
...
KeyError: "unknown topic 'nope'; registered topics: ad_requests, ad_impressions, ad_callbacks, \
page_clicks, attributed_events, page_surges, ad_events_dlq, page_clicks_dlq"
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from adlake.catalog.types import ATTRIBUTED_EVENT_IDS, Topic, lookup, schema

if TYPE_CHECKING:
    from adlake.catalog.types import App

# The partitions of the apps' input and output topics unless ADLAKE_TOPIC_PARTITIONS says
# otherwise (:func:`partitions`). Real-Time Mode runs one task per source partition and one per
# shuffle partition at the same time (see config: local[8], 4 shuffle partitions).
_INPUT_PARTITIONS = 4

_TOPIC_LIST = [
    Topic(
        "ad_requests",
        _INPUT_PARTITIONS,
        "request_id",
        schema(
            "request_id:string",
            "event_time:timestamp",
            "device_id:string",
            "household_id:string",
            "content_id:string",
            "slot_id:string",
            "geo:string",
            "floor_price:double",
            "bid_count:int",
        ),
        id_fields=("request_id",),
        description="An ad slot offered to the auction.",
    ),
    Topic(
        "ad_impressions",
        _INPUT_PARTITIONS,
        "request_id",
        schema(
            "impression_id:string",
            "request_id:string",
            "campaign_id:string",
            "creative_id:string",
            "event_time:timestamp",
            "device_id:string",
            "win_price:double",
        ),
        id_fields=("impression_id",),
        description="An ad shown in answer to a request.",
    ),
    Topic(
        "ad_callbacks",
        _INPUT_PARTITIONS,
        "request_id",
        schema(
            "callback_id:string",
            "impression_id:string",
            "request_id:string",
            "event_type:string",
            "event_time:timestamp",
            "value:double?",
        ),
        id_fields=("callback_id",),
        description="A player or advertiser beacon: click, quartiles, complete, conversion.",
    ),
    Topic(
        "page_clicks",
        _INPUT_PARTITIONS,
        "page_id",
        schema(
            "click_id:string",
            "page_id:string",
            "event_time:timestamp",
            "user_id:string",
        ),
        id_fields=("click_id",),
        description="A click on a page.",
    ),
    Topic(
        "attributed_events",
        _INPUT_PARTITIONS,
        "request_id",
        schema(
            "record_type:string",
            "request_id:string",
            "impression_id:string?",
            "callback_id:string?",
            "campaign_id:string?",
            "creative_id:string?",
            "event_type:string?",
            "value:double?",
            "request_time:timestamp?",
            "impression_time:timestamp?",
            "callback_time:timestamp?",
            "impressions:long?",
            "callbacks:long?",
            "filled:boolean?",
            "source_kafka_ts:timestamp",
        ),
        id_fields=ATTRIBUTED_EVENT_IDS,
        description="Output of the attribution app.",
    ),
    Topic(
        "page_surges",
        _INPUT_PARTITIONS,
        "page_id",
        schema(
            "page_id:string",
            "window_start:timestamp",
            "window_end:timestamp",
            "click_count:long",
            "max_event_time:timestamp",
            "source_kafka_ts:timestamp",
            # In update mode a window is re-emitted as its count grows: each count is its own record.
        ),
        id_fields=("page_id", "window_start", "click_count"),
        description="Output of click-surge detection, key page_id|window_start.",
    ),
]

# Dead-letter topics: one record per input record that could not be parsed or validated.
DLQ_SCHEMA = schema(
    "raw_value:string?",
    "reason:string",
    "source_topic:string",
    "source_partition:int",
    "source_offset:long",
    "source_kafka_ts:timestamp",
)
_TOPIC_LIST += [
    Topic(
        "ad_events_dlq",
        1,
        "source_topic",
        DLQ_SCHEMA,
        id_fields=("source_topic", "source_partition", "source_offset"),
        description="Malformed ad requests, impressions and callbacks, with the reason.",
    ),
    Topic(
        "page_clicks_dlq",
        1,
        "source_topic",
        DLQ_SCHEMA,
        id_fields=("source_topic", "source_partition", "source_offset"),
        description="Malformed page clicks, with the reason.",
    ),
]

TOPICS: dict[str, Topic] = {t.name: t for t in _TOPIC_LIST}
# The apps' input and output topics: their partition count is a deployment setting
# (ADLAKE_TOPIC_PARTITIONS); the DLQs keep theirs.
SCALED_TOPICS = frozenset(t.name for t in _TOPIC_LIST if t.partitions == _INPUT_PARTITIONS)


class PartitionSettings(Protocol):
    """What :func:`partitions` reads: the Settings, or the generator's config."""

    @property
    def topic_partitions(self) -> int | None: ...


def partitions(topic: Topic | str, settings: PartitionSettings | None = None) -> int:
    """The partitions ``topic`` has in this deployment, the one source of truth for topic
    creation, the generator's partitioner and Real-Time Mode's task slots:
    ``settings.topic_partitions`` (ADLAKE_TOPIC_PARTITIONS) for the apps' input and output
    topics when it is set, else the registry's count.

    >>> partitions("page_clicks"), partitions("page_clicks_dlq")
    (4, 1)
    >>> from adlake.config import load_settings
    >>> two = load_settings({"ADLAKE_TOPIC_PARTITIONS": "2"})
    >>> partitions("page_clicks", two), partitions(TOPICS["page_clicks_dlq"], two)
    (2, 1)
    """
    t = topic if isinstance(topic, Topic) else lookup("topic", TOPICS, topic)
    configured = settings.topic_partitions if settings is not None else None
    return configured if configured is not None and t.name in SCALED_TOPICS else t.partitions


def input_partitions(app: App, settings: PartitionSettings | None = None) -> int:
    """The partitions of every input topic of ``app`` (:func:`partitions`): the source tasks
    of a Real-Time Mode query.

    >>> from adlake.registry import app
    >>> input_partitions(app("attribution")), input_partitions(app("click_surge"))
    (12, 4)
    """
    return sum(partitions(t, settings) for t in app.inputs)


def topic(name: str) -> Topic:
    return lookup("topic", TOPICS, name)
