"""A lake job as a task on the lake engine (``ADLAKE_LAKE_ENGINE=connect``): the job's command
line (``python spark_apps/submit.py <module> ...``) run by the task as a Spark Connect client of
the engine, no spark-submit and no JVM of its own.

**One try, one session.** A client that dies does not stop what it started in the engine: an
``AvailableNow`` stream (bronze, silver) goes on writing, and an interrupt reaches only the
operations of the caller's own session. So each try of a task runs under a session id derived
from the task instance and its try (:func:`session_id`), and before writing anything a try
releases the sessions of the tries before it (:func:`adlake.local.engine.release_sessions`: their
streams stopped, their operations interrupted): a retry takes over, it never runs beside its
predecessor. The jobs' writes are idempotent (Delta transactions, ``replaceWhere``, MERGE by
key), so what the earlier try committed is neither lost nor doubled.

Airflow's on-kill (a task marked failed, a timeout) kills the client's process group and
releases its session the same way.
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Sequence

from adlake.config import REPO_ROOT

SESSION_VAR = "ADLAKE_LAKE_SESSION_ID"
# The namespace of the tries' session ids (uuid5 needs one; any fixed UUID does).
_NAMESPACE = uuid.UUID("5d0c4e56-3c5f-4c1e-9a44-7ad1a4e0b001")


def session_id(dag_id: str, task_id: str, run_id: str, map_index: int, try_number: int) -> str:
    """The engine session of one try of a task instance: the same for the same try, another for
    each try (Spark Connect takes a UUID).

    >>> a = session_id("lake_hourly", "silver", "scheduled__2026-11-27T10:00:00+00:00", -1, 1)
    >>> a == session_id("lake_hourly", "silver", "scheduled__2026-11-27T10:00:00+00:00", -1, 1)
    True
    >>> a == session_id("lake_hourly", "silver", "scheduled__2026-11-27T10:00:00+00:00", -1, 2)
    False
    """
    return str(uuid.uuid5(_NAMESPACE, f"{dag_id}\0{task_id}\0{run_id}\0{map_index}\0{try_number}"))


def earlier_sessions(
    dag_id: str, task_id: str, run_id: str, map_index: int, try_number: int
) -> list[str]:
    """The session ids of the tries before ``try_number`` (those a retry releases first)."""
    return [session_id(dag_id, task_id, run_id, map_index, n) for n in range(1, try_number)]


@functools.cache
def engine_operator() -> type:
    """The operator class (built once, importing Airflow's SDK only when a DAG asks for it)."""
    from airflow.sdk import BaseOperator
    from airflow.sdk.exceptions import AirflowException, AirflowFailException

    from adlake.quality.results import EXIT_EXPECTATIONS_FAILED

    class LakeEngineJobOperator(BaseOperator):
        """Run ``submit.py <application_args>`` as a client of the lake engine; a gate's failed
        ``error`` expectations fail the task without a retry, as its spark-submit form does."""

        template_fields: Sequence[str] = ("application_args",)
        ui_color = "#e4f0e8"

        def __init__(self, *, application_args: list[str], gate: bool = False, **kwargs):
            super().__init__(**kwargs)
            self.application_args = application_args
            self.gate = gate
            self._process: subprocess.Popen | None = None
            self._session: str | None = None

        def execute(self, context):
            from adlake.config import load_settings
            from adlake.local.engine import release_sessions

            ti = context["ti"]
            key = (ti.dag_id, ti.task_id, ti.run_id, ti.map_index, ti.try_number)
            self._session = session_id(*key)
            settings = load_settings()
            for line in release_sessions(settings, earlier_sessions(*key)):
                self.log.info("earlier try: %s", line)
            env = {**os.environ, "ADLAKE_LAKE_ENGINE": "connect", SESSION_VAR: self._session}
            argv = [sys.executable, str(REPO_ROOT / "spark_apps" / "submit.py")]
            self._process = subprocess.Popen(
                [*argv, *self.application_args],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
            for line in self._process.stdout:
                self.log.info("%s", line.rstrip())
            code = self._process.wait()
            if code == 0:
                return None
            if self.gate and code == EXIT_EXPECTATIONS_FAILED:
                raise AirflowFailException(
                    "error expectations failed (see the log above and the Data quality page): "
                    "not retried; fix the data or the rule, then clear this task"
                )
            raise AirflowException(f"the job exited with code {code} (its log is above)")

        def on_kill(self):
            from adlake.config import load_settings
            from adlake.local.engine import release_sessions

            if self._process is not None and self._process.poll() is None:
                os.killpg(self._process.pid, signal.SIGKILL)
            if self._session is not None:
                release_sessions(load_settings(), [self._session])

    return LakeEngineJobOperator
