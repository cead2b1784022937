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


def test_an_apps_timer_driven_records_are_record_types_of_its_outputs():
    for app in registry.APPS.values():
        if app.timer_driven:
            types = registry.COLUMN_ENUMERATIONS["record_type"]
            assert set(app.timer_driven) <= set(types), app.name
            assert all("record_type" in registry.topic(t).schema.names for t in app.outputs)


def test_an_app_declaration_names_its_own_knobs_and_the_triggers():
    knob = registry.Knob("window_s", "number", 1.0, "a window")
    with pytest.raises(ValueError, match="no knob 'engine'"):
        registry.App("x", "ops", "m", (), (), knobs=(knob,), checkpoint_knobs=("engine",))
    with pytest.raises(ValueError, match="no knob 'lag_s'"):
        registry.App(
            "x",
            "ops",
            "m",
            (),
            (),
            knobs=(knob,),
            state=registry.StateClose("window_s", "lag_s", "", ""),
        )
    with pytest.raises(ValueError, match="switch"):
        registry.App("x", "ops", "m", (), (), same_checkpoint_switches=(("realtime", "batch"),))
    with pytest.raises(ValueError, match="trigger 'continuous'"):
        registry.App("x", "ops", "m", (), (), default_trigger="continuous")


def test_every_topic_has_a_bronze_table():
    assert {t.sources for t in registry.TABLES.values() if t.layer == "bronze"} == {
        (name,) for name in registry.TOPICS
    }


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


def test_views_group_a_registered_source_by_its_columns():
    for view in registry.VIEWS.values():
        source = registry.table(view.source)
        assert source.change_feed, f"{view.name}: source {source.name} needs the change feed"
        derived = dict(view.key_exprs)
        for key in view.keys:
            assert key in derived or key in source.schema.names
        for agg in view.aggregates:
            assert agg.column is None or agg.column in source.schema.names


def test_aggregate_declarations_are_checked():
    with pytest.raises(ValueError, match="kind 'median'"):
        registry.Aggregate("m", "median", "x")
    with pytest.raises(ValueError, match="count takes no column"):
        registry.Aggregate("n", "count", "x")


def test_silver_tables_extend_their_topic_with_bronze_coordinates():
    silver = registry.table("silver_ad_callbacks")
    assert silver.schema.names[:6] == registry.topic("ad_callbacks").schema.names
    assert set(registry.BRONZE_COORDINATES) <= set(silver.schema.names)
    assert silver.keys == ("callback_id",) and silver.partition_by == ("event_date",)
