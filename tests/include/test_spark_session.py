"""The session factory's settings, checked on the builder without starting a JVM."""

import pytest

pyspark = pytest.importorskip("pyspark")

from pyspark.sql import SparkSession  # noqa: E402 - only after the importorskip above

from adlake import spark_session  # noqa: E402 - as above
from adlake.config import load_settings  # noqa: E402 - as above
from adlake.local import versions  # noqa: E402 - as above

RUNTIME = "ops" if pyspark.__version__ == versions.SPARK_OPS else "lake"
OTHER = "lake" if RUNTIME == "ops" else "ops"


def options(settings):
    builder = spark_session.configure_builder(SparkSession.Builder(), RUNTIME, settings)
    return dict(builder._options)


def test_rocksdb_changelog_and_shuffle_partitions_from_config():
    conf = options(load_settings({"ADLAKE_SHUFFLE_PARTITIONS": "7"}))
    assert conf["spark.sql.streaming.stateStore.providerClass"] == spark_session.ROCKSDB_PROVIDER
    assert conf["spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"] == "true"
    assert conf["spark.sql.shuffle.partitions"] == "7"
    assert conf["spark.master"] == load_settings({}).spark_master(RUNTIME)


def test_runtime_specific_settings():
    conf = options(load_settings({}))
    if RUNTIME == "lake":
        assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
        assert (
            conf["spark.databricks.delta.snapshotPartitions"]
            == conf["spark.sql.shuffle.partitions"]
        )
        assert "spark.sql.streaming.stateStore.checkpointFormatVersion" not in conf
    else:
        assert conf["spark.sql.streaming.stateStore.checkpointFormatVersion"] == "2"
        assert conf["spark.sql.streaming.checkpoint.fileChecksum.enabled"] == "false"
        checksums = load_settings({"ADLAKE_CHECKPOINT_CHECKSUMS": "true"})
        assert options(checksums)["spark.sql.streaming.checkpoint.fileChecksum.enabled"] == "true"
        assert conf["spark.sql.adaptive.enabled"] == "false"
        assert "spark.sql.extensions" not in conf


def test_jars_leave_out_what_spark_ships():
    jars = spark_session.runtime_jars(RUNTIME, load_settings({}))
    names = [p.name for p in jars]
    assert any(n.startswith("spark-sql-kafka-0-10") for n in names)
    assert not any(
        n.startswith(("scala-library", "spark-tags", "hadoop-client-api")) for n in names
    )


def test_wrong_interpreter_for_runtime_says_which_to_use():
    with pytest.raises(spark_session.RuntimeMismatchError, match=f".venv/{OTHER}/bin/python"):
        spark_session.check_runtime(OTHER)


def test_missing_jars_say_run_setup(tmp_path):
    settings = load_settings({"ADLAKE_JARS_DIR": str(tmp_path)})
    with pytest.raises(spark_session.MissingJarsError, match="make setup"):
        spark_session.runtime_jars(RUNTIME, settings)
