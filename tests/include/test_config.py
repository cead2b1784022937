import dataclasses
from pathlib import Path

import pytest

from adlake import config, setting
from adlake.config import REPO_ROOT, ConfigError, load_settings


def test_local_defaults_derive_every_path_from_runtime_dir():
    s = load_settings({"ADLAKE_RUNTIME_DIR": "/data/x"})
    assert s.profile == "local"
    assert s.kafka_bootstrap == "127.0.0.1:9092"
    assert s.spark_master("lake") == "local[2]"
    for derived in (s.tables_dir, s.checkpoints_dir, s.status_dir, s.reports_dir, s.kafka_dir):
        assert derived.parent == Path("/data/x")
    assert s.table_path("bronze_page_clicks") == Path("/data/x/tables/bronze_page_clicks")


def test_compose_profile_points_at_services():
    s = load_settings({"ADLAKE_PROFILE": "compose"})
    assert s.kafka_bootstrap == "kafka:9092"
    assert s.spark_master("ops") == "spark://spark-ops-master:7077"
    assert s.runtime_dir == Path("/opt/adlake/data")


def test_override_one_setting():
    s = load_settings({"ADLAKE_SHUFFLE_PARTITIONS": "16", "ADLAKE_SPARK_UI": "yes"})
    assert (s.shuffle_partitions, s.spark_ui) == (16, True)


def test_the_apps_live_with_the_scheduler_unless_set_to_their_service():
    for profile in ("local", "compose"):
        s = load_settings({"ADLAKE_PROFILE": profile})
        assert (s.apps_host, s.app_loop_interval_s, s.app_request_timeout_s) == (
            "scheduler",
            10,
            120,
        )
    assert load_settings({"ADLAKE_APPS_HOST": "service"}).apps_host == "service"


@pytest.mark.parametrize(
    "name, value, allowed",
    [
        ("ADLAKE_PROFILE", "prod", "allowed values are local, compose"),
        ("ADLAKE_SHUFFLE_PARTITIONS", "many", "expected an integer from 1 to 10000"),
        ("ADLAKE_SHUFFLE_PARTITIONS", "0", "expected an integer from 1 to 10000"),
        ("ADLAKE_KAFKA_BOOTSTRAP", "localhost", "expected host:port"),
        ("ADLAKE_SPARK_MASTER_OPS", "mesos://x", "expected local"),
        ("ADLAKE_SPARK_UI", "maybe", "expected true or false"),
        ("ADLAKE_DRIVER_MEMORY", "lots", "expected a size"),
        ("ADLAKE_LOG_LEVEL", "LOUD", "allowed values are ALL"),
        ("ADLAKE_MAX_RECORD_BYTES", "256k", "expected an integer from 1024 to 1048576"),
        ("ADLAKE_MAX_RECORD_BYTES", "1023", "expected an integer from 1024 to 1048576"),
        ("ADLAKE_MAX_RECORD_BYTES", "1048577", "expected an integer from 1024 to 1048576"),
        ("ADLAKE_AIRFLOW_USERS", "viewer", "expected name:role pairs"),
        ("ADLAKE_AIRFLOW_USERS", "viewer:reader", "a role one of viewer, user, op, admin"),
        ("ADLAKE_AIRFLOW_USERS", "a:viewer,a:op", "each name once"),
        ("ADLAKE_AIRFLOW_USERS", "admin:viewer", "none 'admin'"),
        ("ADLAKE_AIRFLOW_USERS", "x y:viewer", "letters, digits"),
        ("ADLAKE_APPS_HOST", "docker", "allowed values are scheduler, service"),
        ("ADLAKE_APP_LOOP_INTERVAL_S", "0", "expected an integer from 1 to 300"),
        ("ADLAKE_APP_LOOP_INTERVAL_S", "301", "expected an integer from 1 to 300"),
        ("ADLAKE_APP_REQUEST_TIMEOUT_S", "9", "expected an integer from 10 to 3600"),
    ],
)
def test_invalid_value_names_the_setting_and_what_is_allowed(name, value, allowed):
    with pytest.raises(ConfigError) as err:
        load_settings({name: value})
    message = str(err.value)
    assert message.startswith(f"{name}={value!r} is not valid")
    assert allowed in message


def test_a_removed_setting_says_what_replaced_it():
    with pytest.raises(ConfigError, match="ADLAKE_APP_STALE_MARGIN_S is no longer a setting: .*"):
        load_settings({"ADLAKE_APP_STALE_MARGIN_S": "60"})


def test_unknown_setting_is_rejected_not_ignored():
    with pytest.raises(ConfigError, match="unknown setting ADLAKE_SHUFLE_PARTITIONS"):
        load_settings({"ADLAKE_SHUFLE_PARTITIONS": "4"})


def test_the_record_limit_is_256_kib_unless_set():
    assert load_settings({}).max_record_bytes == 262_144
    assert load_settings({"ADLAKE_PROFILE": "compose"}).max_record_bytes == 262_144
    assert load_settings({"ADLAKE_MAX_RECORD_BYTES": "1048576"}).max_record_bytes == 1_048_576


def test_airflow_users_are_name_role_pairs_of_the_local_profile():
    assert load_settings({}).airflow_users == ()
    users = load_settings({"ADLAKE_AIRFLOW_USERS": "viewer:viewer, analyst:User,"}).airflow_users
    assert users == (("viewer", "VIEWER"), ("analyst", "USER"))
    # the compose profile's users are FAB's: the setting would do nothing there
    with pytest.raises(ConfigError, match="unknown setting ADLAKE_AIRFLOW_USERS"):
        load_settings({"ADLAKE_PROFILE": "compose", "ADLAKE_AIRFLOW_USERS": "v:viewer"})


def test_partitions_default_to_two_locally_and_to_the_registrys_in_compose():
    local, compose = (load_settings({"ADLAKE_PROFILE": p}) for p in ("local", "compose"))
    assert (local.topic_partitions, local.shuffle_partitions) == (2, 2)
    assert (compose.topic_partitions, compose.shuffle_partitions) == (None, 8)
    assert load_settings({"ADLAKE_TOPIC_PARTITIONS": ""}).topic_partitions is None
    assert load_settings({"ADLAKE_TOPIC_PARTITIONS": "2"}).topic_partitions == 2
    assert load_settings({"ADLAKE_TOPIC_PARTITIONS": "1000"}).topic_partitions == 1000


@pytest.mark.parametrize("value", ["0", "1001", "two", "-1"])
def test_topic_partitions_out_of_range_names_the_setting(value):
    with pytest.raises(ConfigError) as err:
        load_settings({"ADLAKE_TOPIC_PARTITIONS": value})
    assert str(err.value) == (
        f"ADLAKE_TOPIC_PARTITIONS={value!r} is not valid: expected an integer from 1 to 1000, "
        "or nothing"
    )


def test_the_settings_page_lists_every_row_as_the_rows_say():
    page = (REPO_ROOT / "docs" / "configuration.md").read_text()
    assert config.docs_table() in page, (
        "docs/configuration.md's settings table differs from config.ROWS: paste the output of "
        "`.venv/lake/bin/python -m adlake.config docs` over it"
    )
    # every setting of the class is a row with a meaning, and nothing else is
    fields = [f.name for f in dataclasses.fields(config.Settings)]
    assert fields == ["profile", *(row.name for row in config.ROWS)]
    assert all(row.meaning.strip() for row in config.ROWS)


def test_a_row_added_is_parsed_checked_and_documented(monkeypatch):
    row = setting.Setting("toy_limit", setting.Int(1, 9), "3", "a toy's limit")
    monkeypatch.setattr(config, "ROWS", (*config.ROWS, row))
    assert "| `ADLAKE_TOY_LIMIT` | `3` | same | an integer from 1 to 9 | a toy's limit |" in (
        config.docs_table()
    )
    with pytest.raises(ConfigError, match="ADLAKE_TOY_LIMIT='10' is not valid"):
        config.load_settings({"ADLAKE_TOY_LIMIT": "10"})


def test_the_retentions_follow_the_lakes_unless_set():
    s = load_settings({"ADLAKE_LAKE_RETENTION_HOURS": "48"})
    assert (s.gx_results_retention_hours, s.airflow_metadata_retention_hours) == (48, 48)
    assert s.airflow_log_retention_hours == 48
    s = load_settings({"ADLAKE_AIRFLOW_LOG_RETENTION_HOURS": "24"})
    assert (s.lake_retention_hours, s.airflow_log_retention_hours) == (168, 24)
