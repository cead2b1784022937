# syntax=docker/dockerfile:1
# Airflow 3 for the compose shape. /opt/airflow is laid out like a checkout after `make setup`:
# the project installed editable from /opt/airflow (docker-compose.yaml mounts the live source over
# it), the ops environment in .venv/ops, the jar sets in .cache/jars and the Data Docs assets in
# .cache/data-docs-assets. The lake environment is
# Airflow's own, as it is locally. Every version comes from include/adlake/local/versions.py: read
# during the build (jar sets; the Python environments install from the lock files generated from
# it, include/adlake/local/locks/), or, for image tags, passed in as build
# arguments by docker-compose.yaml, whose values are generated from it (adlake.local.compose_versions).
ARG AIRFLOW_VERSION
ARG PYTHON_VERSION
# The ops runtime's Spark: the ops app jar is compiled against its jars.
ARG SPARK_OPS_VERSION
# The Node.js image whose npm vendors the scripts, styles and fonts of GX's Data Docs pages.
ARG NODE_VERSION

FROM apache/spark:${SPARK_OPS_VERSION} AS spark-ops

# The jar sets, resolved by adlake.local.bootstrap itself (it needs Maven and a stdlib-only Python).
FROM maven:3.9-eclipse-temurin-17 AS jars
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 \
 && rm -rf /var/lib/apt/lists/*
COPY include/adlake/__init__.py include/adlake/config.py /src/include/adlake/
COPY include/adlake/local /src/include/adlake/local
RUN python3 /src/include/adlake/local/bootstrap.py --jars-only

# The ops runtime's own jar (the JVM attribution processor), compiled by adlake.local.bootstrap with the
# JDK against the jars of the ops runtime's pinned Spark image.
FROM maven:3.9-eclipse-temurin-17 AS opsjar
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=spark-ops /opt/spark/jars /opt/spark/jars
COPY include/adlake/__init__.py include/adlake/config.py /src/include/adlake/
COPY include/adlake/local /src/include/adlake/local
COPY spark_apps/ops/jvm /src/spark_apps/ops/jvm
RUN python3 /src/include/adlake/local/bootstrap.py --app-jar-only --spark-jars /opt/spark/jars

# The scripts, styles and fonts GX's Data Docs pages load from CDNs, vendored from npm by
# adlake.local.bootstrap at their pinned versions and hashes; the plugin serves them instead.
# The full (not slim) Node.js image has the python3 bootstrap needs.
FROM node:${NODE_VERSION}-bookworm AS datadocs
COPY include/adlake/__init__.py include/adlake/config.py /src/include/adlake/
COPY include/adlake/local /src/include/adlake/local
RUN python3 /src/include/adlake/local/bootstrap.py --data-docs-assets-only

FROM apache/airflow:${AIRFLOW_VERSION}-python${PYTHON_VERSION}
ARG AIRFLOW_VERSION

# Spark drivers run in client mode inside the Airflow containers, so they need a JVM.
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends default-jre-headless \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/*
USER airflow

WORKDIR /opt/airflow
COPY --chown=airflow:0 pyproject.toml ./
COPY --chown=airflow:0 include/adlake ./include/adlake
COPY --chown=airflow:0 spark_apps ./spark_apps

# The lake environment is Airflow's own: its lock (include/adlake/local/locks/lake.txt, every
# package pinned with its hashes, the set the suite passes with) installed over the base image with
# --require-hashes, then the project without its dependencies. The lock pins the base image's
# Airflow release (a test checks), so installing it never swaps Airflow; the last line fails the
# build if it did. No `pip check` here: the base image also carries providers the platform never
# imports, whose requirements the lock was not resolved against (`make setup`, whose environments
# hold only their lock, runs it and fails on any conflict).
RUN pip install --no-cache-dir --require-hashes -r include/adlake/local/locks/lake.txt \
 && pip install --no-cache-dir --no-deps --no-build-isolation --editable . \
 && test "$(python -c 'from importlib.metadata import version; print(version("apache-airflow"))')" \
    = "${AIRFLOW_VERSION}"

# The ops environment from its lock (include/adlake/local/locks/ops.txt), with --require-hashes and
# `pip check`, as `make setup` builds it.
# A virtual environment refuses user installs, which the Airflow image may turn on globally.
RUN PIP_USER=false python include/adlake/local/bootstrap.py --envs-only --env ops

COPY --from=jars --chown=airflow:0 /src/.cache/jars/lake ./.cache/jars/lake
COPY --from=jars --chown=airflow:0 /src/.cache/jars/ops ./.cache/jars/ops
COPY --from=opsjar --chown=airflow:0 /src/.cache/jars/ops-app ./.cache/jars/ops-app
COPY --from=datadocs --chown=airflow:0 /src/.cache/data-docs-assets ./.cache/data-docs-assets
