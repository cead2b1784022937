"""Data quality with Great Expectations 1.24: suites for every gold table and view, their results.

* :mod:`.expectations` — what a rule is (:class:`~.expectations.Rule`, its builders, the suite
  parameters), neutral (no GX, no PySpark, no registry): the gold tables' modules
  (:mod:`adlake.gold`) write their business rules with it;
* :mod:`.rules` — the expectations of every suite: those derived from the registry (required
  fields, keys, enumerations, non-negative amounts, the interval) and the business rules a person
  writes (a gold table's in its module, a view's there), each with a severity, ``error`` (fails
  the quality task) or ``warn`` (recorded).
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
