"""Benchmarks of the lake jobs, run in the lake environment (``.venv/lake``): bronze ingest and
the jobs' fixed costs (:mod:`.bronze`), view refresh (:mod:`.views`; its source
:mod:`.views_source`, its report suite :mod:`.views_suite`), the quality jobs (:mod:`.quality`)."""
