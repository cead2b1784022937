"""Metrics from configuration, checked without starting anything: Airflow's ``[metrics]``
variables of ``make up`` (their names against Airflow's own configuration template) and the
Spark conf of ``spark_metrics``. The scrape of a running app's endpoint is in
``tests/spark_apps/ops/test_click_surge_app.py``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

from adlake.config import ConfigError, load_settings
from adlake.local.platform import airflow_env, check_metrics_packages, metrics_env
from tests.conftest import private_settings


def airflow_options(section: str) -> set[str]:
    """The options Airflow's installed configuration template declares in ``section``."""
    spec = importlib.util.find_spec("airflow")
    template = Path(next(iter(spec.submodule_search_locations))) / "config_templates/config.yml"
    return set(yaml.safe_load(template.read_text())[section]["options"])


def test_airflow_metrics_are_off_by_default(tmp_path):
    env = airflow_env(private_settings(tmp_path), base={})
    assert not [k for k in env if k.startswith(("AIRFLOW__METRICS__", "OTEL_"))]


@pytest.mark.parametrize(
    ("kind", "port", "expected_port"), [("otel", 0, "4318"), ("statsd", 9125, "9125")]
)
def test_airflow_metrics_from_settings(tmp_path, kind, port, expected_port):
    settings = private_settings(tmp_path).with_overrides(
        airflow_metrics=kind,
        airflow_metrics_host="collector.example",
        airflow_metrics_port=port,
        airflow_metrics_prefix="adlake.airflow",
    )
    env = airflow_env(settings, base={})
    section = f"AIRFLOW__METRICS__{kind.upper()}"
    assert {k: v for k, v in env.items() if k.startswith("AIRFLOW__METRICS__")} == {
        f"{section}_ON": "True",
        f"{section}_HOST": "collector.example",
        f"{section}_PORT": expected_port,
        f"{section}_PREFIX": "adlake.airflow",
    }
    # each variable names an option of Airflow's [metrics] section
    names = {k.removeprefix("AIRFLOW__METRICS__").lower() for k in env if "__METRICS__" in k}
    assert names <= airflow_options("metrics")
    if kind == "otel":
        assert env["OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"] == (
            "http://collector.example:4318/v1/metrics"
        )


def test_a_bad_metrics_setting_is_refused():
    with pytest.raises(ConfigError, match="ADLAKE_AIRFLOW_METRICS='prometheus'"):
        load_settings({"ADLAKE_AIRFLOW_METRICS": "prometheus"})
    with pytest.raises(ConfigError, match="ADLAKE_SPARK_UI_PORT"):
        load_settings({"ADLAKE_SPARK_UI_PORT": "70000"})


def test_statsd_without_its_package_is_refused_before_anything_starts():
    settings = load_settings({"ADLAKE_AIRFLOW_METRICS": "statsd"})
    if importlib.util.find_spec("statsd") is not None:
        pytest.skip("the statsd package is installed here")
    with pytest.raises(SystemExit, match="needs the statsd package"):
        check_metrics_packages(settings)
    check_metrics_packages(load_settings({"ADLAKE_AIRFLOW_METRICS": "otel"}))


def test_spark_metrics_turn_on_the_ui_and_the_prometheus_sink():
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    from adlake.spark_session import configure_builder

    def conf(environ: dict[str, str]) -> dict[str, str]:
        return dict(
            configure_builder(SparkSession.Builder(), "lake", load_settings(environ))._options
        )

    off = conf({})
    assert off["spark.ui.enabled"] == "false"
    assert not [k for k in off if k.startswith("spark.metrics.") or "prometheus" in k]
    on = conf({"ADLAKE_SPARK_METRICS": "true", "ADLAKE_SPARK_UI_PORT": "4050"})
    assert on["spark.ui.enabled"] == "true" and on["spark.ui.port"] == "4050"
    assert on["spark.sql.streaming.metricsEnabled"] == "true"
    assert on["spark.metrics.conf.*.sink.prometheusServlet.class"] == (
        "org.apache.spark.metrics.sink.PrometheusServlet"
    )
    assert on["spark.metrics.conf.*.sink.prometheusServlet.path"] == "/metrics/prometheus"
    assert on["spark.ui.prometheus.enabled"] == "true"
    # the lake tasks' drivers (spark-submit) bind their UI to loopback
    assert metrics_env(load_settings({"ADLAKE_SPARK_METRICS": "true"})) == {
        "SPARK_LOCAL_IP": "127.0.0.1"
    }
