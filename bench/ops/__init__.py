"""Benchmarks of the operational apps, run in the ops environment (``.venv/ops``): latency
(:mod:`.latency`; its Real-Time Mode boundaries :mod:`.boundaries`, what its runs watch
:mod:`.watchers`, the report's suite :mod:`.suite`), the bare Kafka hop (:mod:`.kafka_hop`) and
the soak (:mod:`.soak`; its samples :mod:`.soak_samples`, its no-loss accounting
:mod:`.soak_accounting`)."""
