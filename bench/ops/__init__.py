"""Benchmarks of the operational apps, run in the ops environment (``.venv/ops``): latency
(:mod:`.latency`), the bare Kafka hop (:mod:`.kafka_hop`) and the soak (:mod:`.soak`)."""
