"""Streaming-app lifecycle, in one module: start, stop, restart, status and supervision of the
operational apps (registry ``APPS`` of runtime ``ops``).

Used by the apps' Airflow DAGs (:func:`act`), the supervisor DAG (:func:`supervise`),
``make up``/``make down`` and the UI. Standard library only: no PySpark, no Airflow.

**No task hosts an app.** An Airflow task's supervisor escalates SIGTERM to SIGKILL within
seconds and a retried task could start a second driver, so a task only *acts*:

* :func:`start` launches the app as a detached process in a session of its own, with the ops
  interpreter (``settings.ops_python``): ``python -m adlake.apps.launcher ... -- <app module>
  --trigger T --<knob> V ...``. The launcher takes an exclusive ``flock`` on
  ``<runtime>/locks/<app>.lock`` and runs the app in the same process, so the app holds the lock
  for its whole life and the kernel releases it when the process dies, however it dies. One
  instance, whatever Airflow does: a second start, from anywhere, is refused
  (:class:`AlreadyRunning`). :func:`holder` says who holds the lock (a non-blocking ``flock``
  attempt, not a pid file).
* :func:`stop` writes the stop marker, sends SIGTERM (the app lets its running batch commit and
  exits 0), waits up to the drain timeout, then SIGKILLs the app's process group; it returns once
  the lock is free.
* The desired state (running or stopped, trigger, knobs) lives in a file; :func:`act` changes it
  and acts; :func:`supervise` (every minute) restarts what should run and does not or whose status
  is stale or failed, with exponential backoff, and stops what should not run.

**Where the apps' processes live** (``settings.apps_host``). ``scheduler`` (``make up``): whoever
acts starts and stops them, the app's DAG task (:func:`act`) and the ``apps_supervisor`` DAG
(:func:`supervise`), in the scheduler's machine. ``service`` (compose): only the reconcile loop
(``python -m adlake.apps loop``, :mod:`~adlake.apps.loop`, the service ``streaming-apps``) does:
:func:`act` records the desired state and hands the rest to the loop as a request
(:mod:`~adlake.apps.service`), and :func:`supervise` only checks that the loop runs, which runs
the same pass (:func:`reconcile`) every ``app_loop_interval_s``. Either way the decisions are the
ones below, in one place.

**Files** under the runtime directory::

    locks/<app>.lock              held by the running app; says who (pid, its start, boot id,
                                  PID namespace, mode, argv), blanked as it exits
    locks/<app>.control.lock      serialises act/supervise on one app (held for seconds)
    locks/apps-loop.lock          held by the reconcile loop (apps_host service), one at a time
    apps/<app>.desired.json       desired state: running|stopped, trigger, knobs, when, why
                                  (none: stopped; unreadable: unknown, the app left alone)
    apps/<app>.restarts.json      the supervisor's restarts: count, reason, last error, backoff
    apps/<app>.exit.json          how the last run ended (absent or older than the run: killed)
    apps/<app>.checkpoint.json    what the checkpoint was made by (trigger, engine), moved-aside
                                  checkpoints and, after a switch, where the new one starts
    apps/requests/<app>.<id>.*    actions handed to the reconcile loop and their answers
    apps/loop.json                the reconcile loop's heartbeat and last pass
    logs/<app>.log                the app's output, appended run after run
    status/<app>.json             the app's own status (``adlake.status``), with a heartbeat
                                  when idle

**Staleness.** A micro-batch app reports after every batch and, when idle, a heartbeat (Spark's
idle event, about every 10 s). A Real-Time Mode batch lasts a checkpoint interval
(``app_rtm_interval_s``, given to the app as ``--trigger-interval``) and reports at its end; in
between, the app checks every 20 s that its query is alive (its driver answers and the query is active:
``spark_apps.common.streaming.listener.query_alive``) and says so. Either app is stale after
``app_stale_after_s`` (120 s) without a report, whatever the interval. A started app has
``app_start_grace_s`` more to report at all.

**Backoff.** The first restart after a failure is immediate; each further one waits twice as
long as the last, from ``app_backoff_min_s`` (30 s) up to ``app_backoff_max_s`` (10 minutes);
once the app has been healthy for ``app_backoff_reset_s`` (10 minutes) the next failure is
restarted at once again. A start by a user resets the backoff.

**Restarts and trigger switches keep the checkpoint where Spark allows it**, as each app's
registry entry declares (``App.same_checkpoint_switches``, ``App.checkpoint_knobs``; an app that
declares none gets a new checkpoint at every switch). Measured with Spark 4.3.0, both apps, each
direction (see ``tests/spark_apps/ops/test_app_lifecycle.py``):

* click_surge (update output mode in both modes, one aggregation): Real-Time Mode ⇄ micro-batch
  resume on the same checkpoint, state included: open windows keep their counts across the
  switch.
* attribution (``transformWithState``; update output mode in Real-Time Mode, append in
  micro-batch): Spark refuses to resume either way (``STATE_STORE_INVALID_CONFIG_AFTER_RESTART``:
  "Cannot change outputMode from Append to Update between restarts", and back). Its engine
  (``jvm``/``python``) is a different operator too.

Where the checkpoint cannot be kept, :func:`start` moves it aside (renamed
``<app>.<trigger>[.<engine>].<UTC time>`` next to it, never deleted) and starts a new one from
the old one's **committed offsets** (``offsets/N`` of the latest ``commits/N``: the end of the
last committed batch in both modes), passed as ``--starting-offsets`` JSON. So no input record is
skipped, and nothing is read twice beyond what any restart rereads (an interrupted, uncommitted
batch). What is *not* carried is the state: the new query starts with no open keys. For
attribution, that means for the keys open at the switch (requests within their window, items
waiting for a partner, tombstones of closed keys):

* a request seen before the switch is never closed: no ``request_closed`` for it;
* an impression or callback arriving after the switch whose request (or impression) came
  before it is emitted as ``orphan_*`` when its window closes, not as ``attributed_*``;
* an item waiting in state at the switch (arrived before its partner) is not emitted at all,
  neither attributed nor orphan;
* a duplicate (same impression_id/callback_id) of an event seen before the switch is emitted
  again: consumers deduplicate by ids.

Had click_surge needed it, its windows open at the switch would have restarted their counts at
zero. Records written and committed before the switch stay as they are.

The package, along its seams:

* :mod:`~adlake.apps.state`: the actions, triggers and states, the errors, the records
  (:class:`Desired`, :class:`Holder`, :class:`StopResult`, :class:`Restarts`), the paths and
  atomic JSON files, the registry's side (apps, triggers, knobs, the app's flags:
  :func:`app_argv`) and the desired state;
* :mod:`~adlake.apps.checkpoints`: committed offsets, :func:`same_checkpoint`, moving a
  checkpoint aside;
* :mod:`~adlake.apps.process`: the launcher's command line, the lock (:func:`holder`), the control
  lock (:func:`control`), reaping leftovers, :func:`start`, :func:`stop`, :func:`restart` (and
  :func:`launch`, :func:`terminate`: start and stop under a control lock already held);
* :mod:`~adlake.apps.supervisor`: staleness, :func:`derive_state`, :func:`app_status`,
  :func:`act` (:func:`record_intent`, then :func:`carry_out`), the backoff, :func:`supervise` and
  its pass :func:`reconcile`;
* :mod:`~adlake.apps.service` and :mod:`~adlake.apps.loop`: the apps in a service of their own,
  the requests handed to its reconcile loop and the loop itself;
* :mod:`~adlake.apps.cli`: ``python -m adlake.apps`` (``make status``, ``make app``): every
  app's status and lifecycle as a table, the actions, an app in the foreground.

>>> from adlake.config import load_settings                      # doctest: +SKIP
>>> s = load_settings()                                           # doctest: +SKIP
>>> act(s, "click_surge", "start", knobs={"threshold": 50})       # doctest: +SKIP
{'app': 'click_surge', 'action': 'start', 'result': {'pid': 4242, 'mode': 'realtime', ...}, ...}
>>> act(s, "click_surge", "start")                                # doctest: +SKIP
Traceback (most recent call last):
adlake.apps.AlreadyRunning: click_surge is already running: pid 4242, mode realtime, ...
>>> [r["action"] for r in supervise(s)]                           # doctest: +SKIP
[]
"""

from adlake.apps.checkpoints import committed_offsets, same_checkpoint
from adlake.apps.process import (
    LAUNCHER,
    LEFTOVER_GRACE_S,
    LOCK_TIMEOUT_S,
    START_SETTLE_S,
    control,
    holder,
    launch,
    log_tail,
    restart,
    settings_env,
    start,
    stop,
    terminate,
)
from adlake.apps.state import (
    ACTIONS,
    DESIRED_STATES,
    STATES,
    TRIGGERS,
    AlreadyRunning,
    AppError,
    AppStartError,
    AppStopError,
    Busy,
    Desired,
    Holder,
    InvalidRequest,
    Restarts,
    StopResult,
    app_argv,
    check_knobs,
    check_rules,
    default_knobs,
    exit_path,
    lock_path,
    log_path,
    read_desired,
    read_restarts,
    rtm_interval_s,
    write_desired,
    write_restarts,
)
from adlake.apps.supervisor import (
    act,
    app_status,
    backoff_delay_s,
    carry_out,
    decide,
    derive_state,
    interval_s,
    observe_health,
    reconcile,
    record_intent,
    record_restart,
    stale_after_s,
    supervise,
)

# The constants are read where they are defined: a test that changes one patches that module
# (e.g. adlake.apps.process.LEFTOVER_GRACE_S), as it calls a private helper there.
__all__ = [
    "ACTIONS",
    "DESIRED_STATES",
    "LAUNCHER",
    "LEFTOVER_GRACE_S",
    "LOCK_TIMEOUT_S",
    "START_SETTLE_S",
    "STATES",
    "TRIGGERS",
    "AlreadyRunning",
    "AppError",
    "AppStartError",
    "AppStopError",
    "Busy",
    "Desired",
    "Holder",
    "InvalidRequest",
    "Restarts",
    "StopResult",
    "act",
    "app_argv",
    "app_status",
    "backoff_delay_s",
    "carry_out",
    "check_knobs",
    "check_rules",
    "committed_offsets",
    "control",
    "decide",
    "default_knobs",
    "derive_state",
    "exit_path",
    "holder",
    "interval_s",
    "launch",
    "lock_path",
    "log_path",
    "log_tail",
    "observe_health",
    "read_desired",
    "read_restarts",
    "rtm_interval_s",
    "reconcile",
    "record_intent",
    "record_restart",
    "restart",
    "same_checkpoint",
    "settings_env",
    "stale_after_s",
    "start",
    "stop",
    "supervise",
    "terminate",
    "write_desired",
    "write_restarts",
]
