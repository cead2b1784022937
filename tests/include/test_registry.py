import pytest

from adlake import registry


@pytest.mark.parametrize("topic", registry.TOPICS.values(), ids=lambda t: t.name)
def test_topic_key_and_ids_are_fields_of_its_schema(topic):
    assert topic.key_field in topic.schema.names
    assert set(topic.id_fields) <= set(topic.schema.names)
    assert topic.partitions >= 1


def test_apps_read_and_write_registered_topics():
    for app in registry.APPS.values():
        for name in (*app.inputs, *app.outputs, *([app.dlq] if app.dlq else [])):
            assert name in registry.TOPICS, f"{app.name} uses unregistered topic {name}"
        assert app.runtime in ("lake", "ops")


def test_every_topic_has_a_bronze_table():
    assert {t.source for t in registry.TABLES.values() if t.layer == "bronze"} == set(
        registry.TOPICS)


def test_unknown_names_list_what_exists():
    with pytest.raises(KeyError, match="registered apps: attribution, click_surge"):
        registry.app("attribution_v2")


def test_field_type_is_checked():
    with pytest.raises(ValueError, match="type 'float'"):
        registry.Field("x", "float")


def test_spark_schema_is_derived_from_the_declaration():
    T = pytest.importorskip("pyspark.sql.types")
    schema = registry.topic("ad_callbacks").schema.spark()
    assert schema["event_time"].dataType == T.TimestampType()
    assert schema["value"].dataType == T.DoubleType()
    assert schema.fieldNames() == registry.topic("ad_callbacks").schema.names
