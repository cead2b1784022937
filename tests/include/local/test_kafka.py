"""The local broker's lifecycle, against a real Apache Kafka process."""

import socket

import pytest

from adlake import registry
from adlake.local.kafka import KafkaError, LocalKafka
from adlake.processes import alive

pytestmark = pytest.mark.integration


@pytest.fixture
def own_broker(settings, tmp_path):
    # A broker of its own (own ports and directory), so stopping it leaves the session's alone.
    from adlake.local.kafka import free_ports

    port, controller_port = free_ports(2)
    broker = LocalKafka(
        settings.with_overrides(
            runtime_dir=tmp_path,
            kafka_bootstrap=f"127.0.0.1:{port}",
            kafka_controller_port=controller_port,
        )
    )
    yield broker
    broker.stop()


def port_open(bootstrap: str) -> bool:
    host, port = bootstrap.rsplit(":", 1)
    with socket.socket() as sock:
        return sock.connect_ex((host, int(port))) == 0


def test_start_is_idempotent_and_stop_leaves_no_process(own_broker):
    assert own_broker.start() is True
    pid = own_broker.pid()
    assert pid and port_open(own_broker.bootstrap)

    assert own_broker.start() is False  # found running: reported and left alone
    assert own_broker.pid() == pid

    assert own_broker.stop() is True
    assert not alive(pid)
    assert not port_open(own_broker.bootstrap)
    assert own_broker.pid() is None and not own_broker.pid_file.exists()
    assert own_broker.stop() is False


def test_restart_keeps_data_and_topic_creation_is_idempotent(own_broker):
    own_broker.start()
    assert set(own_broker.create_topics()) == set(registry.TOPICS)
    own_broker.stop()
    own_broker.start()  # storage already formatted: reused, topics still there
    assert own_broker.create_topics() == []


def test_port_taken_by_someone_else_is_a_clear_error(own_broker):
    host, port = own_broker.bootstrap.rsplit(":", 1)
    with socket.socket() as squatter:
        squatter.bind((host, int(port)))
        squatter.listen()
        with pytest.raises(KafkaError, match="already in use"):
            own_broker.start()


def test_session_broker_has_registry_topics_with_their_partitions(kafka):
    from confluent_kafka.admin import AdminClient

    metadata = AdminClient({"bootstrap.servers": kafka.bootstrap}).list_topics(timeout=10)
    for topic in registry.TOPICS.values():
        assert len(metadata.topics[topic.name].partitions) == topic.partitions


def test_topics_are_created_with_the_configured_partitions(kafka, settings, monkeypatch):
    # On the session's broker: a topic of its own, scaled like the apps' topics.
    import dataclasses
    import uuid

    from confluent_kafka.admin import AdminClient

    from adlake.local.kafka import create_topics

    name = f"partitions-{uuid.uuid4().hex[:8]}"
    topic = dataclasses.replace(registry.topic("page_clicks"), name=name)
    from adlake.catalog import topics  # where partitions() reads it

    monkeypatch.setattr(topics, "SCALED_TOPICS", registry.SCALED_TOPICS | {name})
    two = settings.with_overrides(topic_partitions=2)
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    try:
        assert create_topics(kafka.bootstrap, [topic], settings=two) == [name]
        assert len(admin.list_topics(timeout=10).topics[name].partitions) == 2
    finally:
        admin.delete_topics([name])[name].result(30)


def test_an_existing_topic_with_other_partitions_is_reported_not_changed(kafka, settings, capsys):
    # The session's broker has the registry's 4 partitions; 2 are configured.
    from adlake.local.kafka import create_topics

    clicks = registry.topic("page_clicks")
    two = settings.with_overrides(topic_partitions=2)
    assert create_topics(kafka.bootstrap, [clicks], settings=two) == []
    assert capsys.readouterr().err == (
        "warning: topic page_clicks has 4 partitions on the broker but 2 are configured "
        "(ADLAKE_TOPIC_PARTITIONS=2); delete the topic (or the broker's data) to have it created "
        "with the configured count, or set ADLAKE_TOPIC_PARTITIONS to match\n"
    )
    assert create_topics(kafka.bootstrap, [clicks], settings=settings) == []
    assert capsys.readouterr().err == ""
