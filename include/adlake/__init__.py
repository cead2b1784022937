"""Adlake platform code: configuration, registry, Spark session factory, local runtime."""
