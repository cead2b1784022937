"""Data quality with Great Expectations 1.24: suites for every gold table and view, their results.

* :mod:`.rules` — the expectations, neutral (no GX, no PySpark): those derived from the registry
  (required fields, keys, enumerations, non-negative amounts, the interval) and the business rules
  a person writes, each with a severity, ``error`` (fails the quality task) or ``warn`` (recorded).
* :mod:`.project` — the GX file project in ``expectations/`` (``great_expectations.yml``, suites,
  validation definitions, checkpoints), generated from :mod:`.rules`:
  ``python -m adlake.quality.generate`` writes it, ``--check`` says whether it drifted. At run
  time a job validates from a working copy under ``<runtime>/gx``, where GX's ``uncommitted/``
  (validation results, Data Docs) lives too; nothing is written into the repository.
* :mod:`.results` — a validation result → ``dq_results`` rows, and which failures fail the task.
* :mod:`.history` — each table's recent validations and pass rate, read from GX's result store
  (JSON files: no Spark, no GX), for the Airflow UI.

The Spark side is ``spark_apps/lake/quality.py``. This package imports neither PySpark nor GX at
module level: the DAG files read the registry, and the registry's jobs name this package's job.
"""

from __future__ import annotations

ERROR, WARN = "error", "warn"
SEVERITIES = (ERROR, WARN)
