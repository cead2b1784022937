# syntax=docker/dockerfile:1
# Spark for the lake runtime: the official image with the lake jar set (Delta, Kafka connector) on
# the classpath of every JVM, so masters, workers and executors download nothing at run time.
# Every version comes in as a build argument from docker-compose.yaml, which mirrors
# include/adlake/local/versions.py (tests/test_docker_compose.py checks that they agree).
ARG SPARK_VERSION

# Resolved the way adlake.local.bootstrap resolves jar sets locally: Maven, runtime scope (what Spark itself
# provides is `provided` in these poms and stays out), so the cluster runs exactly the jars the
# local runtime and the tests use.
FROM maven:3.9-eclipse-temurin-17 AS jars
# Comma-separated group:artifact:version coordinates (versions.jvm_artifacts("lake")).
ARG JVM_PACKAGES
WORKDIR /build
RUN set -eu; \
    test -n "$JVM_PACKAGES" || { echo "build argument JVM_PACKAGES is required" >&2; exit 1; }; \
    dependencies=""; \
    for gav in $(echo "$JVM_PACKAGES" | tr ',' ' '); do \
        set -- $(echo "$gav" | tr ':' ' '); \
        dependencies="$dependencies<dependency><groupId>$1</groupId><artifactId>$2</artifactId>"; \
        dependencies="$dependencies<version>$3</version></dependency>"; \
    done; \
    { printf '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'; \
      printf '<groupId>io.adlake.jars</groupId><artifactId>lake</artifactId><version>1</version>'; \
      printf '<packaging>pom</packaging><dependencies>%s</dependencies></project>\n' "$dependencies"; \
    } > pom.xml; \
    mvn -q -B dependency:copy-dependencies -DoutputDirectory=/jars -DincludeScope=runtime; \
    ls /jars

FROM apache/spark:${SPARK_VERSION}
COPY --from=jars /jars/ /opt/spark/jars/
