"""Benchmarks of the lake jobs, run in the lake environment (``.venv/lake``): bronze ingest and
the jobs' fixed costs (:mod:`.bronze`), view refresh (:mod:`.views`), the quality jobs
(:mod:`.quality`)."""
