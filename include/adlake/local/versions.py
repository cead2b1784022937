"""Every pinned version of Adlake, in one place.

The two Python environments (``lake`` and ``ops``) and the three JVM jar sets (``lake``, ``ops``,
``kafka``) are all derived from the constants below by :mod:`adlake.local.bootstrap`, and the image tags
and build arguments of ``docker-compose.yaml`` by :mod:`adlake.local.compose_versions`; nothing else in
the repository names a version. Changing a pin here and running ``make setup`` rebuilds exactly the
environments and jar sets whose inputs changed. The environments install from lock files
(``locks/<env>.txt``: every transitive package pinned, with its hashes), generated from the
requirements below by :mod:`adlake.local.locks`: after changing a Python pin, run ``make lock``
before ``make setup`` (which refuses a stale lock).

This module is standard-library only: ``make setup`` runs it with the system Python before any
virtual environment exists.

>>> requirements("ops")[0]
'pyspark==4.3.0'
>>> jvm_artifacts("lake")[0]
'io.delta:delta-spark_4.2_2.13:4.4.0'
>>> jvm_artifacts("ops")
['org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0']
"""

from __future__ import annotations

PYTHON = "3.11"
SCALA = "2.13"

# Open-source Spark splits the mission in two (docs/architecture.md, "Two Spark runtimes"): Real-Time Mode
# with stateful operators needs Spark 4.3, while delta-spark 4.4.x supports Spark <= 4.2.
SPARK_LAKE = "4.2.0"
SPARK_OPS = "4.3.0"
# delta-spark 4.4.1 is on PyPI but its jars (delta-spark_4.2_2.13, delta-storage) are not in the
# Maven repository this project reaches; 4.4.0 is, so both the Python package and the jars use it.
DELTA = "4.4.0"
# The Spark Kafka connector is published per Spark release, but the Maven repository this project
# reaches holds spark-sql-kafka-0-10 only up to 4.2.0 (no 4.3.0). Both runtimes therefore load
# connector 4.2.0, which brings spark-token-provider-kafka-0-10 of its own release (4.2.0) as a
# dependency; the integration tests prove each runtime reads and writes Kafka with it, Real-Time
# Mode included. Move the ops runtime to 4.3.0 when it is published.
KAFKA_CONNECTOR = "4.2.0"
KAFKA_BROKER = "4.1.1"
LOG4J = "2.24.3"

# One release for the lake environment (Airflow's own) and the compose shape's Airflow image.
AIRFLOW = "3.3.2"
AIRFLOW_SPARK_PROVIDER = "6.3.4"
GREAT_EXPECTATIONS = "1.24.*"
PLAYWRIGHT = "1.64.1"
CONFLUENT_KAFKA = "2.16.1"
PYTEST = ">=8,<10"
# The linter and formatter (`make lint`), configured in pyproject.toml.
RUFF = "0.17.6"
# The resolver that writes the lock files (`make lock`, adlake.local.locks); not installed into
# any environment.
UV = "0.13.9"
# The soak's plot (bench/ops/soak.py).
MATPLOTLIB = "3.11.2"

# Only in the compose shape: Airflow's metadata database.
POSTGRES = "16"
# Only in the compose shape's Airflow image build: the Node.js image whose npm vendors the Data
# Docs assets below.
NODE = "22"

# The scripts, stylesheets and fonts GX's Data Docs pages load from public CDNs, vendored by
# `make setup` instead: each tarball fetched with `npm pack`, refused unless its sha512 is the one
# pinned here, and its listed directories (with its licence) kept under
# .cache/data-docs-assets/<name>@<version>/. The plugin serves them in the CDNs' stead
# (adlake.ui.data_docs, docs/security.md). The versions are the ones GX 1.24's templates name;
# where a template names only a major (vega@5, vega-lite@5, vega-embed@6), its newest release.
# A template's bootstrap-table 1.19.0 filter-control stylesheet is 1.19.1's but for its banner.
DATA_DOCS_NPM: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "jquery": (
        "3.7.1",
        "sha512-m4avr8yL8kmFN8psrbFFFmB/If14iN5o9nw/NgnnM+kybDJpRsAynV2BsfpTYrTRysYUdADVD7CkUUizgkpLfg==",
        ("dist",),
    ),
    "popper.js": (
        "1.12.9",
        "sha512-s0EEi9xiSCdqz9lV4IiVH5yIZnDX/U1t0tCjB+0jXx9jW8lrR7kOpVupiUg175ogqVoudpDXHF1p6dKATCHMeg==",
        ("dist",),
    ),
    "bootstrap": (
        "4.3.1",
        "sha512-rXqOmH1VilAt2DyPzluTi2blhk17bO7ef+zLLPlWvG494pDxcM234pJ8wTc/6R40UWizAIIMgxjvxZg5kmsbag==",
        ("dist",),
    ),
    "bootstrap-table": (
        "1.19.1",
        "sha512-WvV+l1AI/C+zThaKmfHmi/IuayVNB0qdFyEhFx1jyZhO0oLtNJNANkCR3rvJf6Dkh72dsLElxpE/bzK9seEQLA==",
        ("dist",),
    ),
    "bootstrap-datepicker": (
        "1.9.0",
        "sha512-9rYYbaVOheGYxjOr/+bJCmRPihfy+LkLSg4fIFMT9Od8WwWB/MB50w0JO1eBgKUMbb7PFHQD5uAfI3ArAxZRXA==",
        ("dist",),
    ),
    "@forevolve/bootstrap-dark": (
        "1.1.0",
        "sha512-A3ucpEpxPoTVO490lZZCfjPXxv832l7mm1IxX3bXyxvgwnPGXDLyh7dWrphXKO8YBAu3EswbBEu3VSW8NRMW3A==",
        ("dist",),
    ),
    "@fortawesome/fontawesome-free": (
        "6.6.0",
        "sha512-60G28ke/sXdtS9KZCpZSHHkCbdsOGEhIUGlwq6yhY74UpTiToIh8np7A8yphhM4BWsvNFtIvLpi4co+h9Mr9Ow==",
        ("css", "webfonts"),
    ),
    "vega": (
        "5.33.1",
        "sha512-1fArfVDUqVbb5z8n+/nVQb+VNBzx8svY6CrsyTK4Ujm4yrd9I1auoKxBAPXLCavY1LcrbHUskQbGUP8gXOzyQw==",
        ("build",),
    ),
    "vega-lite": (
        "5.23.0",
        "sha512-l4J6+AWE3DIjvovEoHl2LdtCUkfm4zs8Xxx7INwZEAv+XVb6kR6vIN1gt3t2gN2gs/y4DYTs/RPoTeYAuEg6mA==",
        ("build",),
    ),
    "vega-embed": (
        "6.29.0",
        "sha512-PmlshTLtLFLgWtF/b23T1OwX53AugJ9RZ3qPE2c01VFAbgt3/GSNI/etzA/GzdrkceXFma+FDHNXUppKuM0U6Q==",
        ("build",),
    ),
}

RUNTIMES = ("lake", "ops")
JAR_SETS = ("lake", "ops", "kafka")

# What every environment has beside what its code imports: the test runner and the linter
# (pyproject's `dev` extra), and the build backend: the project itself is installed editable
# without build isolation (no network needed).
_DEV = [f"pytest{PYTEST}", f"ruff=={RUFF}"]
_BUILD = ["setuptools>=70", "wheel"]
# In an environment for its tests and benchmarks, not for the platform's run time: the UI tests
# drive Debian's chromium (apt) with playwright (its own browser download is never used); the
# benchmark report draws its plots with matplotlib. pyproject's `dev` and `bench` extras.
_PLAYWRIGHT = f"playwright=={PLAYWRIGHT}"
_MATPLOTLIB = f"matplotlib=={MATPLOTLIB}"
# Shared by both environments: the Kafka client used by the generator, the broker tooling and the
# tests, with the tools above.
_COMMON = [
    f"confluent-kafka=={CONFLUENT_KAFKA}",
    *_DEV,
    "pyyaml>=6",
    *_BUILD,
    # PySpark's Arrow-based paths (Python transformWithState, toPandas) need these.
    "pyarrow>=18",
    "protobuf>=5",
]

_REQUIREMENTS = {
    # The lake environment is also Airflow's and runs most tests. pyspark-client is pulled in by
    # the Spark provider and must match pyspark; pandas 3 triggers a warning on PySpark 4.2.
    "lake": [
        f"pyspark=={SPARK_LAKE}",
        f"pyspark-client=={SPARK_LAKE}",
        f"delta-spark=={DELTA}",
        f"apache-airflow=={AIRFLOW}",
        f"apache-airflow-providers-apache-spark=={AIRFLOW_SPARK_PROVIDER}",
        # Without the [spark] extra: its pin excludes Spark 4.2.
        f"great-expectations=={GREAT_EXPECTATIONS}",
        "pandas<3",
        _PLAYWRIGHT,
        *_COMMON,
    ],
    # The ops environment holds only what the operational streaming apps need.
    "ops": [
        f"pyspark=={SPARK_OPS}",
        "pandas<3",
        _MATPLOTLIB,
        *_COMMON,
    ],
}

_KAFKA_CONNECTOR = [
    f"org.apache.spark:spark-sql-kafka-0-10_{SCALA}:{KAFKA_CONNECTOR}",
]

_JVM = {
    "lake": [
        f"io.delta:delta-spark_{SPARK_LAKE.rsplit('.', 1)[0]}_{SCALA}:{DELTA}",
        *_KAFKA_CONNECTOR,
    ],
    "ops": [
        *_KAFKA_CONNECTOR,
    ],
    "kafka": [
        f"org.apache.kafka:kafka_{SCALA}:{KAFKA_BROKER}",
        # The broker logs through SLF4J 1.x into log4j2; without this binding it logs nothing.
        f"org.apache.logging.log4j:log4j-slf4j-impl:{LOG4J}",
    ],
}


def requirements(env: str) -> list[str]:
    """pip requirement lines for one Python environment (``lake`` or ``ops``)."""
    if env not in _REQUIREMENTS:
        raise ValueError(f"unknown environment {env!r}; allowed: {', '.join(_REQUIREMENTS)}")
    return list(_REQUIREMENTS[env])


def extras() -> dict[str, list[str]]:
    """pyproject.toml's optional dependencies, derived from the same pins: each environment's
    run-time requirements (``pip install -e '.[lake]'``: what the platform imports), ``dev``
    (test runner, linter, the UI tests' browser driver) and ``bench`` (the report's plots). A
    unit test fails when pyproject.toml and this disagree, printing the table to paste.

    >>> extras()["dev"]
    ['pytest>=8,<10', 'ruff==0.17.6', 'playwright==1.64.1']
    >>> extras()["bench"], "setuptools>=70" in extras()["lake"]
    (['matplotlib==3.11.2'], False)
    """
    tools = {*_DEV, *_BUILD, _PLAYWRIGHT, _MATPLOTLIB}
    out = {env: [r for r in reqs if r not in tools] for env, reqs in _REQUIREMENTS.items()}
    out["dev"] = [*_DEV, _PLAYWRIGHT]
    out["bench"] = [_MATPLOTLIB]
    return out


def jvm_artifacts(jar_set: str) -> list[str]:
    """Maven coordinates (``group:artifact:version``) of one jar set; transitive runtime
    dependencies are resolved by Maven."""
    if jar_set not in _JVM:
        raise ValueError(f"unknown jar set {jar_set!r}; allowed: {', '.join(_JVM)}")
    return list(_JVM[jar_set])


def spark_version(runtime: str) -> str:
    """The Spark version a runtime (``lake`` or ``ops``) is pinned to."""
    return {"lake": SPARK_LAKE, "ops": SPARK_OPS}[runtime]
