"""The Delta log read from its files (``spark_apps.lake.delta_log``) says what Delta says: the
version, table id, configuration, streaming writers' transactions and live files of a table,
from the newest commit's checksum and by replaying the log past a checkpoint."""

from __future__ import annotations

import pytest

from spark_apps.lake import delta_log

pytestmark = pytest.mark.integration


def delta_says(spark, path: str) -> dict:
    """What Delta's own snapshot holds (through the session's JVM: the reference)."""
    from pyspark.sql import DataFrame

    jvm = spark._jvm
    none = jvm.scala.Option.empty()
    snapshot = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, path).update(
        False, none, none
    )
    files = [r.path for r in DataFrame(snapshot.allFiles().toDF(), spark).collect()]
    configuration = snapshot.metadata().configuration()
    return {
        "version": snapshot.version(),
        "table_id": snapshot.metadata().id(),
        "configuration": {
            k: configuration.get(k).get()
            for k in ["delta.enableChangeDataFeed"]
            if configuration.get(k).isDefined()
        },
        "num_files": snapshot.numOfFiles(),
        "size_bytes": snapshot.sizeInBytes(),
        "files": sorted(files),
    }


def read(state: delta_log.LogState) -> dict:
    return {
        "version": state.version,
        "table_id": state.table_id,
        "configuration": {
            k: v for k, v in state.configuration.items() if k == "delta.enableChangeDataFeed"
        },
        "num_files": state.num_files,
        "size_bytes": state.size_bytes,
        "files": sorted(f["path"] for f in state.files or []),
    }


def test_the_log_read_from_its_files_is_what_delta_says(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id BIGINT, day STRING) USING DELTA PARTITIONED BY (day) "
        "TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true', "
        "'delta.checkpointInterval' = '5')"
    )
    for n in range(7):  # past a checkpoint (every 5 commits), with removes after it
        spark.range(n, n + 3).selectExpr("id", f"'d{n % 2}' AS day").write.format("delta").mode(
            "append"
        ).save(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 3")
    # a streaming writer's transaction, as bronze's and a view's commits record them
    spark.conf.set("spark.databricks.delta.write.txnAppId", "query-1")
    spark.conf.set("spark.databricks.delta.write.txnVersion", "42")
    try:
        spark.range(1).selectExpr("id", "'d9' AS day").write.format("delta").mode("append").save(
            path
        )
    finally:
        spark.conf.unset("spark.databricks.delta.write.txnAppId")
        spark.conf.unset("spark.databricks.delta.write.txnVersion")
    log = tmp_path / "t" / "_delta_log"
    assert list(log.glob("*.checkpoint.parquet")), "the table has a checkpoint to replay from"

    expected = delta_says(spark, path)
    state = delta_log.log_state(path, with_files=True)
    assert read(state) == expected
    assert state.transactions == {"query-1": 42}
    # without the newest checksum: the log replayed from the checkpoint says the same
    (log / f"{state.version:020d}.crc").unlink()
    replayed = delta_log.log_state(path, with_files=True)
    assert read(replayed) == expected and replayed.transactions == {"query-1": 42}
    assert delta_log.latest_version(path) == expected["version"]
    assert delta_log.latest_version(tmp_path / "none") is None
    with pytest.raises(delta_log.DeltaLogError, match="holds no commit"):
        delta_log.log_state(tmp_path / "none")
