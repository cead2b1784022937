import math

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
    knob = registry.Knob("window_s", "number", 1.0, "a window", minimum=0.001, maximum=60)
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
    # the benchmarks' knob values, measured runs' and timer bursts', are the app's knobs'
    burst = registry.Benchmark(burst=registry.TimerBurst("skew-1", "", (("skew_s", 1),)))
    with pytest.raises(ValueError, match="no knob 'skew_s'"):
        registry.App("x", "ops", "m", (), (), knobs=(knob,), bench=burst)
    too_wide = registry.Benchmark(knobs=(("window_s", 90),))
    with pytest.raises(ValueError, match="benchmark knob window_s: 90 is out of range"):
        registry.App("x", "ops", "m", (), (), knobs=(knob,), bench=too_wide)
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


def every_knob():
    """Every knob of the registry: the apps' and the jobs' trigger forms."""
    for app in registry.APPS.values():
        yield from app.knobs
    for job in registry.JOBS.values():
        yield from job.params


def test_every_numeric_knob_has_a_finite_range_that_holds_its_default():
    numeric = [k for k in every_knob() if k.type in ("integer", "number")]
    assert {k.name for k in numeric} >= {"window_s", "ttl_s", "threshold", "retention_hours"}
    for knob in numeric:
        assert math.isfinite(knob.minimum) and math.isfinite(knob.maximum), knob.name
        assert knob.minimum <= knob.maximum, knob.name
        assert knob.default is None or knob.minimum <= knob.default <= knob.maximum, knob.name


def test_attributions_ttl_range_covers_its_safety_net_at_the_other_knobs_maximums():
    # ttl_s must exceed 2 windows + lateness (AttributionConfig): at their maximums too
    app = registry.APPS["attribution"]
    window, lateness = app.knob("window_s").maximum, app.knob("lateness_s").maximum
    assert app.knob("ttl_s").maximum > 2 * window + lateness


@pytest.mark.parametrize(
    "bounds",
    [
        {},
        {"minimum": 0},
        {"maximum": 10},
        {"minimum": 0, "maximum": math.inf},
        {"minimum": 5, "maximum": 1},
    ],
)
def test_a_numeric_knob_without_a_finite_range_is_not_declared(bounds):
    with pytest.raises(ValueError, match="needs a finite minimum and maximum"):
        registry.Knob("n", "integer", None, "a count", **bounds)


def test_a_knobs_default_must_be_a_value_it_takes():
    with pytest.raises(ValueError, match="11 is out of range: allowed integers from 0 to 10"):
        registry.Knob("n", "integer", 11, "a count", minimum=0, maximum=10)
    with pytest.raises(ValueError, match="allowed values are a, b"):
        registry.Knob("s", "string", "c", "a choice", choices=("a", "b"))


def test_the_maintenance_retention_is_bounded_by_what_the_configuration_takes():
    from adlake.config import ConfigError, load_settings

    (knob,) = [k for k in registry.MAINTENANCE_PARAMS if k.name == "retention_hours"]
    top = int(knob.maximum)
    assert load_settings({"ADLAKE_LAKE_RETENTION_HOURS": str(top)}).lake_retention_hours == top
    with pytest.raises(ConfigError):
        load_settings({"ADLAKE_LAKE_RETENTION_HOURS": str(top + 1)})


def test_partitions_are_the_registrys_unless_the_setting_scales_the_apps_topics():
    from adlake.config import load_settings

    default = load_settings({"ADLAKE_PROFILE": "compose"})  # no setting: the registry's
    two = load_settings({"ADLAKE_TOPIC_PARTITIONS": "2"})
    for topic in registry.TOPICS.values():
        assert registry.partitions(topic) == topic.partitions
        assert registry.partitions(topic.name, default) == topic.partitions
        dlq = topic.name.endswith("_dlq")
        assert registry.partitions(topic, two) == (topic.partitions if dlq else 2), topic.name
    app_topics = {t for a in registry.APPS.values() for t in (*a.inputs, *a.outputs)}
    assert app_topics == registry.SCALED_TOPICS
    attribution = registry.app("attribution")
    assert registry.input_partitions(attribution, default) == 12
    assert registry.input_partitions(attribution, two) == 6
