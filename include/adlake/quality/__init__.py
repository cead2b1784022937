"""Data quality with Great Expectations 1.24: suites for every gold table and view, their results.

* what a rule is (:class:`~adlake.catalog.expectations.Rule`, its builders, the suite
  parameters) is the catalog's (:mod:`adlake.catalog.expectations`): a rule lives on what it is
  about, a gold table's in its module, a view's on its entry;
* :mod:`.rules` — the expectations of every suite: those derived from the catalog (required
  fields, keys, enumerations, non-negative amounts, the interval), then the business rules of
  the table or view, each with a severity, ``error`` (fails the quality task) or ``warn``
  (recorded).
* :mod:`.project` — the GX file project in ``expectations/`` (``great_expectations.yml``, suites,
  validation definitions, checkpoints), generated from :mod:`.rules`:
  ``python -m adlake.quality.generate`` writes it, ``--check`` says whether it drifted. At run
  time a job validates from a working copy under ``<runtime>/gx``, where GX's ``uncommitted/``
  (validation results, Data Docs) lives too; nothing is written into the repository.
* :mod:`.results` — a validation result → ``dq_results`` rows, and which failures fail the task.
* :mod:`.history` — each table's recent validations and pass rate, read from GX's result store
  (JSON files: no Spark, no GX), for the Airflow UI.

The Spark side is ``spark_apps/lake/quality.py``. This package imports neither PySpark nor GX at
module level: the DAG files read the catalog, and the catalog's jobs name this package's job.
"""

from __future__ import annotations
