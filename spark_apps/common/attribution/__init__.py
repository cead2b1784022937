"""The attribution rules, shared by both runtimes: the operational app streams them (ops,
Spark 4.3), the lake's reconciliation runs them in batch (lake, Spark 4.2).

* :mod:`.contract` — record kinds and types, the DLQ fields, every schema, the tunables;
* :mod:`.processor` — the rules as a Python ``StatefulProcessor`` (the specification; its
  docstring states them);
* :mod:`.batch` — the rules over DataFrames (:func:`~.batch.attribute_batch`).

The JVM port of the processor and its bridge belong to the ops runtime
(``spark_apps/ops/jvm``, ``spark_apps/ops/attribution_jvm.py``).
"""
