"""What every streaming app shares: triggers, Kafka in/out, DLQ records, graceful stop, status,
and the one runner.

Delivery semantics, once for all apps: Spark's Kafka source is replayable and its offsets are
committed to the checkpoint with each batch, so after a crash or a stop the query resumes from
the last committed batch and no input is skipped. The Kafka *sink* is at-least-once: records of a
batch that was written but not committed are written again on restart. Every output record
therefore carries its ids (see ``registry.Topic.id_fields``) so consumers deduplicate.

* :mod:`.triggers` — trigger modes and Real-Time Mode's task slots;
* :mod:`.kafka_io` — the Kafka source and sink, output and DLQ record values;
* :mod:`.listener` — the status listener and the latency it observes;
* :mod:`.lifecycle` — the graceful stop;
* :mod:`.runner` — argument parsing, checkpoint and stop marker, start and stop, for every app.
"""

from spark_apps.common.streaming.kafka_io import dlq_value, json_value, read_kafka, write_kafka
from spark_apps.common.streaming.lifecycle import GracefulStop
from spark_apps.common.streaming.listener import StatusReporter, attach_listener, observe_latency
from spark_apps.common.streaming.triggers import (
    DEFAULT_RTM_INTERVAL,
    TRIGGER_MODES,
    TaskSlotsError,
    TriggerConfig,
    check_task_slots,
    required_slots,
)

__all__ = [
    "DEFAULT_RTM_INTERVAL",
    "TRIGGER_MODES",
    "GracefulStop",
    "StatusReporter",
    "TaskSlotsError",
    "TriggerConfig",
    "attach_listener",
    "check_task_slots",
    "dlq_value",
    "json_value",
    "observe_latency",
    "read_kafka",
    "required_slots",
    "write_kafka",
]
