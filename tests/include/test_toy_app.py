"""Adding a streaming app is one registry entry and its module: a toy third app
(``tests/support/toy_app.py``: its ``App`` and output ``Topic`` entries, its ``StreamingApp``)
added to a copy of the registry gets, with no other edit, its Airflow DAG with a form of its
knobs (parsed from ``dags/apps.py``), its lifecycle (started and stopped by runs of that DAG: a
real detached process holding its lock, a trigger switch keeping its checkpoint as its entry
declares), its status entry (``make status``), its latency probe (its entry's outputs, DLQ and
timer-driven records) and what waits in its state, and its card on the Streaming apps page.

No Spark and no broker: the toy's ``main`` runs without Spark (the launcher runs any module), the
probe reads a fake broker. Its query itself runs in the last test, on the session's Spark.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import signal
import time
from pathlib import Path

import pytest

from adlake import apps, latency, registry
from adlake.apps import cli
from adlake.registry import KnobRule
from adlake.status import read_status
from spark_apps.common.streaming.listener import StatusReporter
from spark_apps.common.streaming.runner import parse_args
from tests.dags.conftest import DAGS_DIR, airflow_db, task_env  # noqa: F401  (a fixture)
from tests.include.ui.conftest import auth_manager, client, runtime, token, user  # noqa: F401 - fixtures
from tests.support import toy_app
from tests.support.toy_app import TOY, TOY_TOPIC

DEADLINE_S = 30


@pytest.fixture()
def toy_registry(monkeypatch):
    """The registry with the toy app and its output topic added, as two more entries would."""
    monkeypatch.setitem(registry.APPS, TOY.name, TOY)
    monkeypatch.setitem(registry.TOPICS, TOY_TOPIC.name, TOY_TOPIC)
    return registry.APPS


@pytest.fixture()
def toy_runtime(toy_registry, runtime):
    """The runtime the toy runs in; a toy a failed test left running is killed."""
    yield runtime
    holder = apps.holder(runtime, TOY.name)
    if holder is not None and holder.pid > 0:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(holder.pid, signal.SIGKILL)


def toy_dag():
    """``app_toy_echo`` as Airflow gets it: ``dags/apps.py`` parsed with the registry copy."""
    from airflow.models import DagBag

    bag = DagBag(str(DAGS_DIR / "apps.py"))
    assert not bag.import_errors, bag.import_errors
    return bag.dags


def run_dag(dag, settings, monkeypatch, **conf) -> dict:
    """A run of the app's DAG as a user triggers it; its task's result."""
    from airflow.utils.state import DagRunState

    with monkeypatch.context() as patch:
        for key, value in task_env(settings).items():
            patch.setenv(key, value)
        run = dag.test(run_conf=conf)
    assert run.state == DagRunState.SUCCESS, conf
    (ti,) = run.get_task_instances()
    return ti.xcom_pull(task_ids="act")


def wait_for(predicate, message: str):
    deadline = time.monotonic() + DEADLINE_S
    while not (result := predicate()):
        assert time.monotonic() < deadline, message
        time.sleep(0.05)
    return result


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def session_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[3])


def test_the_toy_app_gets_its_dag_with_a_form_of_its_knobs(toy_registry, airflow_db):
    from adlake.airflow import factory  # Airflow after tests.dags.conftest set its home

    dags = toy_dag()
    assert set(dags) == {"apps_supervisor", "app_attribution", "app_click_surge", "app_toy_echo"}
    assert "app_toy_echo" in factory.expected_dag_ids()
    dag = dags["app_toy_echo"]
    assert TOY.description in dag.doc_md and "streaming-app" in dag.tags
    assert set(dag.params) == {"action", "trigger", "hold_s"}
    hold = dag.params.get_param("hold_s")
    assert (hold.value, hold.schema["type"], hold.schema["minimum"]) == (2.0, "number", 0)
    assert dag.params.get_param("trigger").value == TOY.default_trigger
    # the runner's parser takes the knob as a flag, as the lifecycle passes it
    assert parse_args(toy_app.SPEC, apps.app_argv(TOY.name, "realtime", {"hold_s": 3})).hold_s == 3


def test_a_knob_rule_added_to_the_entry_is_enforced_by_the_form_and_the_apps_guard(
    toy_runtime, monkeypatch
):
    """One row on the app's entry, no other code: the DAG form's action (``apps.act``, what the
    app's ``act`` task calls) refuses the combination before anything is recorded, and the app's
    own guard (the runner's flags) refuses it at its start."""
    rule = KnobRule(
        "hold_s at most 60 in realtime",
        lambda trigger, k: (
            "hold_s over 60 in realtime" if trigger == "realtime" and k["hold_s"] > 60 else None
        ),
    )
    ruled = dataclasses.replace(TOY, rules=(*TOY.rules, rule))
    monkeypatch.setitem(registry.APPS, TOY.name, ruled)
    with pytest.raises(apps.InvalidRequest, match="hold_s over 60 in realtime"):
        apps.act(toy_runtime, TOY.name, "start", trigger="realtime", knobs={"hold_s": 61})
    assert apps.holder(toy_runtime, TOY.name) is None
    assert apps.read_desired(toy_runtime, TOY.name).reason == "default"  # nothing recorded
    spec = dataclasses.replace(toy_app.SPEC, app=ruled)
    argv = apps.app_argv(TOY.name, "realtime", {"hold_s": 61})
    with pytest.raises(SystemExit), contextlib.redirect_stderr(io.StringIO()) as err:
        parse_args(spec, argv)
    assert "hold_s over 60 in realtime" in err.getvalue()
    # within the rule, both take it
    assert parse_args(spec, apps.app_argv(TOY.name, "realtime", {"hold_s": 60})).hold_s == 60


def test_the_toy_app_gets_its_lifecycle_status_and_card(toy_runtime, user, monkeypatch):
    settings = toy_runtime
    # a checkpoint with one committed batch, which a trigger switch keeps (the entry says so)
    checkpoint = settings.checkpoint_path(TOY.name)
    for part in ("offsets", "commits"):
        (checkpoint / part).mkdir(parents=True)
    (checkpoint / "offsets" / "0").write_text('v1\n{}\n{"page_clicks":{"0":7}}\n')
    (checkpoint / "commits" / "0").write_text("v1\n{}\n")
    dag = toy_dag()["app_toy_echo"]

    # start, by a run of its DAG: a detached process, in a session of its own, holding its lock
    started = run_dag(dag, settings, monkeypatch, action="start", hold_s=3.0)
    pid = started["result"]["started"]["pid"]
    holder = apps.holder(settings, TOY.name)
    assert holder.pid == pid and alive(pid) and session_of(pid) == pid
    assert holder.argv[2:] == [
        "tests.support.toy_app",
        "--trigger",
        "processing_time",
        "--hold-s",
        "3.0",
    ]
    with pytest.raises(apps.AlreadyRunning):  # one instance, whoever asks
        apps.start(settings, TOY.name)
    wait_for(lambda: apps.app_status(settings, TOY.name)["state"] == "running", "not running")

    # its status entry: the app's own file, and make status's line with its lifecycle
    status = read_status(settings, TOY.name)
    assert (status["state"], status["mode"], status["hold_s"]) == (
        "running",
        "processing_time",
        3.0,
    )
    waiting = status["waiting_in_state"]  # its entry's state: watermark + hold_s + 1 s
    closes = latency.ts_ms(waiting["closes_at"]) - latency.ts_ms(waiting["watermark"])
    assert (waiting["rows"], closes) == (toy_app.STATE_ROWS, 4000)
    line = next(r for r in cli.status(settings).splitlines() if r.startswith(TOY.name))
    assert " running " in line and f" {pid} " in line and "running/processing_time" in line

    # its card on the Streaming apps page
    body = user.get("/adlake/apps/api/status").json()
    assert [a["app"] for a in body["apps"]] == ["attribution", "click_surge", TOY.name]
    card = body["apps"][2]
    assert (card["state"], card["holder"]["pid"], card["dlq_topic"]) == (
        "running",
        pid,
        TOY.dlq,
    )
    assert card["desired"]["knobs"] == {"hold_s": 3.0}
    assert card["status"]["waiting_in_state"]["rows"] == toy_app.STATE_ROWS
    actions = card["actions"]
    assert (actions["dag_id"], actions["knobs"]) == ("app_toy_echo", ["hold_s"])
    assert {b["path"] for b in actions["buttons"]} == {"api/v2/dags/app_toy_echo/dagRuns"}
    assert actions["buttons"][3]["body"]["conf"] == {
        "action": "restart",
        "trigger": "realtime",
        "hold_s": 3.0,
    }

    # a trigger switch its entry declares resumable keeps the checkpoint where it is
    switched = apps.act(settings, TOY.name, "restart", trigger="realtime", reason="test")
    assert switched["result"]["stopped"]["graceful"]
    assert switched["result"]["started"]["mode"] == "realtime"
    record = apps.app_status(settings, TOY.name)["checkpoint"]
    assert record["shape"] == {"trigger": "realtime"} and "moved_aside" not in record
    assert (checkpoint / "commits" / "0").exists()

    # stop, by a run of its DAG: graceful, the lock free, the page says so
    stopped = run_dag(dag, settings, monkeypatch, action="stop")["result"]["stopped"]
    assert (stopped["how"], stopped["exit_code"], stopped["graceful"]) == ("exited", 0, True)
    assert apps.holder(settings, TOY.name) is None
    wait_for(lambda: not alive(switched["result"]["started"]["pid"]), "the toy still runs")
    assert read_status(settings, TOY.name)["state"] == "stopped"
    card = user.get("/adlake/apps/api/status").json()["apps"][2]
    assert (card["state"], card["desired"]["state"]) == ("stopped", "stopped")


class FakeBroker:
    """Topics as lists of partitions of ``(Kafka timestamp ms, value)``, served by a consumer
    with the calls :class:`adlake.latency.LatencyProbe` makes of ``confluent_kafka.Consumer``."""

    def __init__(self, topics: dict[str, list[list[tuple[float, dict]]]]) -> None:
        self.topics = topics

    def consumer(self, config: dict) -> FakeBroker.Consumer:
        return FakeBroker.Consumer(self)

    class Consumer:
        def __init__(self, broker: FakeBroker) -> None:
            self.broker, self.assigned = broker, []

        def list_topics(self, topic: str, timeout: float):
            from types import SimpleNamespace as Ns

            parts = self.broker.topics.get(topic)
            meta = (
                None
                if parts is None
                else Ns(error=None, partitions=dict.fromkeys(range(len(parts))))
            )
            return Ns(topics={topic: meta} if meta else {})

        def get_watermark_offsets(self, tp, timeout: float) -> tuple[int, int]:
            return 0, len(self.broker.topics[tp.topic][tp.partition])

        def assign(self, partitions) -> None:
            self.assigned = [(tp.topic, tp.partition, tp.offset) for tp in partitions]

        def consume(self, num_messages: int, timeout: float) -> list:
            from types import SimpleNamespace as Ns

            out = []
            for topic, partition, start in self.assigned:
                records = self.broker.topics[topic][partition]
                for offset in range(start, len(records)):
                    ts, value = records[offset]
                    out.append(
                        Ns(
                            error=lambda: None,
                            topic=lambda t=topic: t,
                            partition=lambda p=partition: p,
                            offset=lambda o=offset: o,
                            timestamp=lambda ts=ts: (1, ts),
                            value=lambda v=value: json.dumps(v).encode(),
                        )
                    )
            self.assigned = []
            return out

        def unassign(self) -> None:
            self.assigned = []

        def close(self) -> None:
            pass


def test_the_toy_app_gets_its_latency_probe_from_its_entry(toy_registry, runtime, monkeypatch):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    now = time.time()
    out_ms = float(int(now * 1000) - 1000)  # whole ms, as Kafka timestamps are

    def echo(latency_ms: float, record_type: str = "echo") -> tuple[float, dict]:
        source = latency.iso((out_ms - latency_ms) / 1000)
        return out_ms, {"record_type": record_type, "page_id": "p", "source_kafka_ts": source}

    broker = FakeBroker(
        {
            TOY_TOPIC.name: [[echo(20), echo(40), echo(60_000, "expired")]],
            TOY.dlq: [[echo(0)] * 4, [echo(0)] * 2],
        }
    )
    monkeypatch.setattr(confluent_kafka, "Consumer", broker.consumer)

    # the listener's probe, from the registry entry its query name finds
    reporter = StatusReporter(runtime, TOY.name, "processing_time", probe_every_s=0)
    reporter.extra["hold_s"] = 3.0
    reporter.update(toy_app.progress(0, now))
    reporter.probe_once()
    status = read_status(runtime, TOY.name)
    e2e = status["e2e_latency"]
    assert (e2e["topics"], e2e["samples"], e2e["p50_ms"], e2e["p99_ms"]) == (
        [TOY_TOPIC.name],
        2,
        20.0,
        40.0,
    )
    assert e2e["timer_driven"] == 1  # "expired": counted apart, as the entry declares
    assert status["dlq_total"] == 6
    assert status["waiting_in_state"]["why"].startswith("3 rows: echoes held 3 s behind")

    # python -m adlake.latency: every ops app of the registry, the toy included
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        latency.main([], runtime)
    lines = [json.loads(line) for line in printed.getvalue().splitlines()]
    assert [line["app"] for line in lines] == ["attribution", "click_surge", TOY.name]
    assert lines[2]["e2e_latency"]["p50_ms"] == 20.0


@pytest.mark.integration
def test_the_toy_query_echoes_every_click(spark):
    """The toy's query itself (what ``runner.run(SPEC)`` runs), on raw Kafka-shaped rows."""
    import datetime as dt

    raw = spark.createDataFrame(
        [(b"home", b'{"page_id": "home"}', dt.datetime(2026, 11, 22, 10, 0, 0, 250000))],
        "key binary, value binary, timestamp timestamp",
    )
    (row,) = toy_app.SPEC.build(raw, None, None).collect()
    assert (row.topic, row.key) == (TOY_TOPIC.name, "home")
    assert json.loads(row.value)["page_id"] == "home"
    assert set(json.loads(row.value)) == set(TOY_TOPIC.schema.names)
