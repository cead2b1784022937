"""The streaming-app lifecycle (``adlake.apps``) without Spark or a broker.

Pure decisions (desired state, knobs, backoff, derived state, what the supervisor does) are
checked on records; the lock, the launcher, start, stop and supervise run against real
processes: a helper holding the lock, and a *fake app* started by the real ``start()``. The fake
app comes from a fake ops interpreter (``settings.ops_python``) that runs every command as the real
one would, except that the app module is replaced by :data:`FAKE_APP`, a few lines of Python
that write a status file like an app, stop on SIGTERM, or misbehave on request (ignore SIGTERM,
leave a child behind, exit at once). Everything adlake.apps does around the app (launcher, lock,
session, log, environment, stop marker, exit record, backoff) is the real thing; the real apps
run in ``tests/dags/test_app_lifecycle_dags.py`` (through Airflow) and
``tests/spark_apps/ops/test_app_lifecycle.py`` (trigger switches).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adlake import apps, registry
from adlake.apps.launcher import LOCK_HELD
from adlake.config import load_settings
from adlake.status import read_status, stop_marker, write_status
from tests.conftest import private_settings

APP = "click_surge"
DEADLINE_S = 30  # backstop for waits on real (tiny) processes

FAKE_APP = '''
"""A stand-in for a streaming app: status file, SIGTERM, misbehaviour on request."""
import os, signal, subprocess, sys, time
from adlake import registry
from adlake.config import load_settings
from adlake.status import write_status

settings = load_settings()
module = os.environ["FAKE_APP_MODULE"]
app = next(a.name for a in registry.APPS.values() if a.module == module)
trigger = sys.argv[sys.argv.index("--trigger") + 1]
flag = lambda name: (settings.runtime_dir / f"fake-{name}").exists()
if flag("exit-at-once"):
    print("fake app: failing at start", flush=True)
    sys.exit(3)
if flag("leave-a-child"):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    (settings.runtime_dir / "fake-child.pid").write_text(str(child.pid))
stopping = []
if flag("ignore-sigterm"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
else:
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
print(f"fake app {app} running: {sys.argv[1:]}", flush=True)
while not stopping:
    write_status(settings, app, {"state": "running", "mode": trigger, "argv": sys.argv[1:]})
    time.sleep(0.1)
write_status(settings, app, {"state": "stopped", "mode": trigger})
sys.exit(0)
'''

FAKE_PYTHON = '''#!{python}
"""The ops interpreter, except that the app module after the launcher's "--" is the fake app."""
import os, sys
args = sys.argv[1:]
if "--" in args:
    at = args.index("--") + 1
    os.environ["FAKE_APP_MODULE"] = args[at]
    args[at] = "fake_app"
os.environ["PYTHONPATH"] = {fake_dir!r}
os.execv(sys.executable, [sys.executable, *args])
'''


@pytest.fixture
def settings(tmp_path):
    """Settings of this test alone (state under tmp_path), short backoff bounds kept default."""
    return private_settings(tmp_path / "runtime")


def with_fake_app(settings, fake_dir: Path):
    """``settings`` whose ops interpreter (written into ``fake_dir``) runs the fake app."""
    fake_dir.mkdir()
    (fake_dir / "fake_app.py").write_text(FAKE_APP)
    python = fake_dir / "python"
    python.write_text(FAKE_PYTHON.format(python=sys.executable, fake_dir=str(fake_dir)))
    python.chmod(0o755)
    return settings.with_overrides(ops_python=python)


@pytest.fixture
def fake(tmp_path, settings):
    """Settings whose ops interpreter runs the fake app; processes left running are killed."""
    fake_settings = with_fake_app(settings, tmp_path / "fake")
    yield fake_settings
    for app in ("click_surge", "attribution"):
        current = apps.holder(fake_settings, app)
        if current is not None and current.pid > 0:
            with _suppress():
                os.killpg(current.pid, signal.SIGKILL)
    child = fake_settings.runtime_dir / "fake-child.pid"
    if child.exists():
        with _suppress():
            os.kill(int(child.read_text()), signal.SIGKILL)


def _suppress():
    import contextlib

    return contextlib.suppress(ProcessLookupError, PermissionError)


def flag(settings, name: str) -> None:
    settings.runtime_dir.mkdir(parents=True, exist_ok=True)
    (settings.runtime_dir / f"fake-{name}").touch()


def wait_for(predicate, timeout_s: float = DEADLINE_S, message: str = ""):
    deadline = time.monotonic() + timeout_s
    while not (result := predicate()):
        assert time.monotonic() < deadline, f"condition not met within {timeout_s}s: {message}"
        time.sleep(0.05)
    return result


def alive(pid: int) -> bool:
    """Running (a zombie, dead but not yet reaped by its parent, does not count)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def session_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[3])


# -- desired state -------------------------------------------------------------------------------


def test_desired_state_defaults_to_stopped_with_the_apps_default_trigger_and_knobs(settings):
    desired = apps.read_desired(settings, "click_surge")
    assert (desired.state, desired.trigger, desired.knobs) == (
        "stopped",
        "realtime",
        {"threshold": registry.SURGE_THRESHOLD},
    )
    assert apps.read_desired(settings, "attribution").trigger == "processing_time"


def test_desired_state_round_trips(settings):
    desired = apps.Desired("running", "processing_time", {"threshold": 50}, 1234.5, "on call")
    apps.write_desired(settings, APP, desired)
    assert apps.read_desired(settings, APP) == desired


def test_a_desired_state_write_that_fails_half_way_leaves_the_previous_one(settings, monkeypatch):
    first = apps.Desired("running", "realtime", {"threshold": 7}, 1.0, "first")
    apps.write_desired(settings, APP, first)

    def dump_half(obj, handle, **kwargs):
        handle.write('{"state": "stop')
        raise OSError("disk full")

    monkeypatch.setattr(apps.state.json, "dump", dump_half)
    with pytest.raises(OSError, match="disk full"):
        apps.write_desired(settings, APP, dataclasses.replace(first, state="stopped"))
    monkeypatch.undo()
    assert apps.read_desired(settings, APP) == first
    assert [p.name for p in settings.apps_dir.iterdir()] == [f"{APP}.desired.json"]


def test_desired_state_refuses_what_the_app_cannot_take(settings):
    with pytest.raises(apps.InvalidRequest, match="allowed values are realtime, processing_time"):
        apps.write_desired(settings, APP, apps.Desired("running", "continuous", {}, 0, ""))
    with pytest.raises(apps.InvalidRequest, match="allowed values are running, stopped"):
        apps.write_desired(settings, APP, apps.Desired("paused", "realtime", {}, 0, ""))


def test_knobs_are_typed_checked_and_completed_with_defaults():
    assert apps.check_knobs("click_surge", {"threshold": "50"}) == {"threshold": 50}
    assert apps.check_knobs("attribution", {"window_s": 60, "engine": None}) == {
        "window_s": 60.0,
        "skew_s": 10.0,
        "lateness_s": 30.0,
        "ttl_s": 3600.0,
        "engine": "jvm",
    }
    for app, knobs, message in [
        (
            "click_surge",
            {"treshold": 5},
            "unknown knob 'treshold' for click_surge: allowed knobs are threshold",
        ),
        ("click_surge", {"threshold": 2.5}, "2.5 is not a valid integer"),
        ("click_surge", {"threshold": -1}, "-1 is out of range: allowed integers from 0 to"),
        ("attribution", {"engine": "scala"}, "allowed values are jvm, python"),
    ]:
        with pytest.raises(apps.InvalidRequest, match=message):
            apps.check_knobs(app, knobs)
    with pytest.raises(apps.InvalidRequest, match="allowed apps are attribution, click_surge"):
        apps.check_knobs("bronze", {})


WINDOW = "allowed numbers from 0.001 to 86400"
THRESHOLD = "allowed integers from 0 to 10000000"


@pytest.mark.parametrize(
    "app, knobs, refusal",
    [
        # NaN compares false with any bound: it once reached the app and crashed its start
        ("attribution", {"window_s": float("nan")}, f"nan is not a valid number: {WINDOW}"),
        ("attribution", {"window_s": "NaN"}, f"'NaN' is not a valid number: {WINDOW}"),
        ("attribution", {"window_s": float("inf")}, f"inf is not a valid number: {WINDOW}"),
        ("attribution", {"window_s": "-inf"}, f"'-inf' is not a valid number: {WINDOW}"),
        # a float form of a huge integer is infinite
        ("attribution", {"window_s": "1e400"}, f"'1e400' is not a valid number: {WINDOW}"),
        # too large for a float: once an OverflowError, not a refusal
        ("attribution", {"window_s": 10**400}, f"is not a valid number: {WINDOW}"),
        ("attribution", {"window_s": True}, f"True is not a valid number: {WINDOW}"),
        ("attribution", {"window_s": 86_401}, f"86401 is out of range: {WINDOW}"),
        ("attribution", {"ttl_s": 7 * 86_400 + 1}, "604801 is out of range: allowed numbers"),
        ("attribution", {"skew_s": 3_601}, "3601 is out of range: allowed numbers from 0 to 3600"),
        ("attribution", {"lateness_s": -1}, "-1 is out of range: allowed numbers from 0 to 86400"),
        ("click_surge", {"threshold": float("inf")}, f"inf is not a valid integer: {THRESHOLD}"),
        ("click_surge", {"threshold": False}, f"False is not a valid integer: {THRESHOLD}"),
        ("click_surge", {"threshold": 10**30}, f"{10**30} is out of range: {THRESHOLD}"),
        ("click_surge", {"threshold": "10000001"}, f"'10000001' is out of range: {THRESHOLD}"),
    ],
)
def test_a_knob_out_of_its_finite_range_is_refused_naming_knob_value_and_range(app, knobs, refusal):
    (name,) = knobs
    with pytest.raises(apps.InvalidRequest) as refused:
        apps.check_knobs(app, knobs)
    assert str(refused.value).startswith(f"knob {name} of {app}: ")
    assert refusal in str(refused.value)


def test_a_knob_at_either_end_of_its_range_is_taken():
    assert apps.check_knobs("attribution", {"window_s": 0.001})["window_s"] == 0.001
    assert apps.check_knobs("attribution", {"window_s": "86400"})["window_s"] == 86_400.0
    assert apps.check_knobs("click_surge", {"threshold": 10_000_000.0}) == {"threshold": 10_000_000}


def test_make_ups_set_refuses_a_knob_its_app_would_refuse_before_anything_starts():
    from adlake.local.platform import parse_knobs

    assert parse_knobs(["attribution.window_s=60", "click_surge.threshold=50"]) == {
        "attribution": {"window_s": 60.0},
        "click_surge": {"threshold": 50},
    }
    for pair, refusal in [
        ("attribution.window_s=nan", f"'nan' is not a valid number: {WINDOW}"),
        ("click_surge.threshold=10000001", f"'10000001' is out of range: {THRESHOLD}"),
    ]:
        app, knob = pair.split("=")[0].split(".")
        with pytest.raises(ValueError) as refused:
            parse_knobs([pair])
        assert str(refused.value) == f"--set {pair}: knob {knob} of {app}: {refusal}"


def test_a_stored_knob_out_of_range_falls_back_to_the_default(settings):
    # a desired state written before the bounds (NaN is valid JSON to Python) is read back safe
    path = settings.apps_dir / "attribution.desired.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"state": "running", "knobs": {"window_s": NaN, "lateness_s": 1e999}}')
    knobs = apps.read_desired(settings, "attribution").knobs
    assert (knobs["window_s"], knobs["lateness_s"]) == (300.0, 30.0)


def test_the_app_gets_its_trigger_and_every_knob_as_flags_never_a_checkpoint():
    argv = apps.app_argv("attribution", "realtime", apps.check_knobs("attribution", {}))
    assert argv == [
        "--trigger",
        "realtime",
        "--window-s",
        "300.0",
        "--skew-s",
        "10.0",
        "--lateness-s",
        "30.0",
        "--ttl-s",
        "3600.0",
        "--engine",
        "jvm",
    ]
    assert not any("checkpoint" in a for a in argv)


def test_the_app_process_gets_the_callers_settings(settings):
    assert load_settings(apps.settings_env(settings)) == settings
    users = settings.with_overrides(airflow_users=(("ana", "VIEWER"), ("ops", "OP")))
    assert load_settings(apps.settings_env(users)) == users


def test_each_app_starts_with_its_own_rtm_interval_unless_the_setting_gives_one(settings):
    unset = settings.with_overrides(app_rtm_interval_s=None)
    for app in registry.ops_apps():
        argv = apps.app_argv(
            app.name, "realtime", apps.default_knobs(app.name), apps.rtm_interval_s(unset, app.name)
        )
        assert argv[2:4] == ["--trigger-interval", f"{app.rtm_interval_s} seconds"], app.name
        every = settings.with_overrides(app_rtm_interval_s=7)
        assert apps.rtm_interval_s(every, app.name) == 7


# -- backoff ---------------------------------------------------------------------------------------


def test_backoff_doubles_from_30_seconds_to_10_minutes(settings):
    restarts, now, waits = apps.Restarts(), 1_000_000.0, []
    for _ in range(8):
        restarts = apps.record_restart(settings, restarts, now, "crashed", "exit 1")
        waits.append(restarts.next_allowed_at - now)
        now = restarts.next_allowed_at
    assert waits == [30, 60, 120, 240, 480, 600, 600, 600]
    assert (restarts.count, restarts.consecutive, restarts.reason) == (8, 8, "crashed")
    assert len(restarts.history) == 8 and restarts.history[-1]["error"] == "exit 1"


def test_backoff_resets_after_ten_healthy_minutes_only(settings):
    restarts = apps.Restarts()
    for t in (0.0, 30.0, 90.0):
        restarts = apps.record_restart(settings, restarts, t, "crashed", None)
    assert restarts.consecutive == 3
    # healthy from t=100, a failure seen at t=500 (before 10 minutes): no reset, and the
    # healthy period starts over
    restarts = apps.observe_health(settings, restarts, "running", 100.0)
    restarts = apps.observe_health(settings, restarts, "running", 400.0)
    assert (restarts.healthy_since, restarts.consecutive) == (100.0, 3)
    restarts = apps.observe_health(settings, restarts, "stale", 500.0)
    assert restarts.healthy_since is None
    # "starting" neither counts as healthy nor interrupts it
    restarts = apps.observe_health(settings, restarts, "running", 600.0)
    restarts = apps.observe_health(settings, restarts, "starting", 700.0)
    restarts = apps.observe_health(settings, restarts, "running", 1199.0)
    assert restarts.consecutive == 3
    restarts = apps.observe_health(settings, restarts, "running", 1200.0)
    assert (restarts.consecutive, restarts.next_allowed_at, restarts.count) == (0, None, 3)
    # the next failure is restarted at once, then 30 s later
    restarts = apps.record_restart(settings, restarts, 1300.0, "crashed", None)
    assert restarts.next_allowed_at == 1330.0


# -- derived state and the supervisor's decisions --------------------------------------------------

NOW = 1_800_000_000.0


def derive(settings, *, desired="running", holder=None, status=None, restarts=None, stopping=False):
    return apps.derive_state(
        settings,
        apps.Desired(desired, "processing_time", {}, 0, ""),
        holder,
        status,
        restarts or apps.Restarts(),
        NOW,
        stopping,
    )


def holding(mode="processing_time", started=NOW - 1000):
    return apps.Holder(4242, mode, started, ["python", "-m", "app"])


@pytest.mark.parametrize(
    "mode, age, state",
    [
        ("processing_time", 119, "running"),
        ("processing_time", 121, "stale"),
        # Real-Time Mode reports at each boundary and that it is alive between them: the same
        # bound whatever the interval
        ("realtime", 119, "running"),
        ("realtime", 121, "stale"),
    ],
)
def test_staleness_follows_the_trigger(settings, mode, age, state):
    status = {"state": "running", "written_at": NOW - age}
    assert derive(settings, holder=holding(mode), status=status)[0] == state
    # a longer checkpoint interval does not slow the detection of a hung app
    slow = settings.with_overrides(app_rtm_interval_s=300)
    assert derive(slow, holder=holding(mode), status=status)[0] == state


def test_derived_states(settings):
    fresh = {"state": "running", "written_at": NOW - 5}
    assert derive(settings, holder=holding(), status=fresh)[0] == "running"
    # a report from before this process started does not count: starting, then stale
    old = {"state": "running", "written_at": NOW - 2000}
    assert derive(settings, holder=holding(started=NOW - 60), status=old)[0] == "starting"
    assert (
        derive(
            settings,
            holder=holding(started=NOW - 60),
            status={"state": "starting", "written_at": NOW - 50},
        )[0]
        == "starting"
    )
    assert derive(settings, holder=holding(started=NOW - 421), status=old) == (
        "stale",
        "no batch reported 421s after its start",
    )
    assert (
        derive(
            settings,
            holder=holding(),
            status={"state": "failed", "error": "boom", "written_at": NOW - 1},
        )[0]
        == "failed"
    )
    assert derive(settings, holder=holding(), status=fresh, stopping=True)[0] == "stopping"
    # not running
    assert derive(settings)[0] == "failed"
    assert derive(settings, desired="stopped")[0] == "stopped"
    waiting = apps.Restarts(consecutive=2, next_allowed_at=NOW + 10)
    assert derive(settings, restarts=waiting) == (
        "restarting",
        "not running; next restart allowed in 10s (backoff)",
    )


@pytest.mark.parametrize(
    "desired, state, action",
    [
        ("running", "running", "none"),
        ("running", "starting", "none"),
        ("running", "stopping", "none"),
        ("running", "stale", "restart"),
        ("running", "failed", "restart"),
        ("running", "restarting", "wait"),
        ("stopped", "stopped", "none"),
        ("stopped", "running", "stop"),
        ("stopped", "stale", "stop"),
        ("stopped", "starting", "stop"),
    ],
)
def test_what_the_supervisor_does(desired, state, action):
    assert apps.decide(apps.Desired(desired, "realtime", {}, 0, ""), state) == action


def test_supervise_waits_for_the_backoff_and_leaves_stopped_apps_alone(settings):
    # click_surge should run, is not running, and its backoff runs until NOW + 45;
    # attribution should not run (no desired state: stopped) and does not
    apps.write_desired(
        settings, "click_surge", apps.Desired("running", "realtime", {"threshold": 5}, 0, "test")
    )
    restarts = apps.Restarts(
        count=2, consecutive=2, last_restart_at=NOW - 15, next_allowed_at=NOW + 45
    )
    apps.state.write_restarts(settings, "click_surge", restarts)
    assert apps.reconcile(settings, now=NOW) == [
        {
            "app": "click_surge",
            "action": "wait",
            "ok": True,
            "why": "not running; next restart allowed in 45s (backoff)",
            "next_allowed_at": NOW + 45,
        }
    ]
    assert apps.read_restarts(settings, "click_surge") == restarts
    assert apps.app_status(settings, "attribution", now=NOW)["state"] == "stopped"


def test_a_log_over_its_size_is_rotated_while_its_writer_keeps_appending(settings, tmp_path):
    from adlake.apps.state import rotate_log

    log = tmp_path / "app.log"
    mib = 1024 * 1024
    with open(log, "ab", buffering=0) as writer:  # the app's descriptor, as the launch opens it
        for n in range(4):
            writer.write(str(n).encode() * (mib + 1))
            assert rotate_log(log, mib, backups=2)
            assert not rotate_log(log, mib, backups=2)  # now under the size
        writer.write(b"after")
    # Each rotation copied the log aside and emptied it in place: the writer's next bytes start
    # the file (no hole of zeros where the old content was); two backups, the oldest dropped.
    assert log.read_bytes() == b"after"
    backups = sorted(p.name for p in tmp_path.glob("app.log.*"))
    assert backups == ["app.log.1", "app.log.2"]
    assert set((tmp_path / "app.log.1").read_bytes()) == {ord("3")}
    assert set((tmp_path / "app.log.2").read_bytes()) == {ord("2")}


def test_the_supervisor_rotates_an_apps_log_past_its_size(settings):
    settings = dataclasses.replace(settings, log_max_bytes=1024 * 1024, log_backups=1)
    log = apps.log_path(settings, "click_surge")
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_bytes(b"x" * (settings.log_max_bytes + 1))
    apps.reconcile(settings, now=NOW)
    assert log.stat().st_size == 0
    assert log.with_name("click_surge.log.1").stat().st_size == settings.log_max_bytes + 1


# -- the lock --------------------------------------------------------------------------------------

HOLD_LOCK = """
import fcntl, json, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
os.write(fd, json.dumps({"pid": os.getpid(), "mode": "realtime", "started_at": time.time(),
                         "argv": ["holder"]}).encode())
print("held", flush=True)
sys.stdin.read()  # until the test closes our stdin
"""


@pytest.fixture
def lock_holder(settings):
    """A process holding click_surge's lock, as a running app would."""
    path = apps.lock_path(settings, APP)
    path.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline() == "held\n"
    yield proc
    proc.stdin.close()
    proc.wait(timeout=DEADLINE_S)


def test_holder_names_the_process_holding_the_lock_and_none_once_it_is_gone(settings, lock_holder):
    current = apps.holder(settings, APP)
    assert (current.pid, current.mode, current.argv) == (lock_holder.pid, "realtime", ["holder"])
    assert apps.holder(settings, "attribution") is None
    lock_holder.stdin.close()
    lock_holder.wait(timeout=DEADLINE_S)
    assert apps.holder(settings, APP) is None  # the file remains, the lock went with the process
    assert apps.lock_path(settings, APP).exists()


def test_a_probe_holding_the_lock_for_an_instant_is_not_taken_for_an_app(settings):
    """Another process's ``holder()`` probe (the supervisor's, the page's, ``make status``'s)
    holds the lock for an instant while the record still names a dead app: nobody holds it, so
    a probe meanwhile must say None, not "held by an unknown process" (which made a supervisor
    restart give up)."""
    import fcntl
    import threading

    path = apps.lock_path(settings, APP)
    path.parent.mkdir(parents=True, exist_ok=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(timeout=DEADLINE_S)
    path.write_text(
        json.dumps({"pid": dead.pid, "mode": "realtime", "started_at": 0.0, "argv": ["killed"]})
    )
    probe = os.open(path, os.O_RDWR)
    fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
    released = threading.Timer(0.3, os.close, (probe,))  # closing releases the flock
    released.start()
    try:
        assert apps.holder(settings, APP) is None
    finally:
        released.join()


def test_a_start_is_refused_while_the_lock_is_held(fake, lock_holder):
    with pytest.raises(apps.AlreadyRunning, match=f"pid {lock_holder.pid}, mode realtime"):
        apps.start(fake, APP)
    with pytest.raises(apps.AlreadyRunning):
        apps.act(fake, APP, "start")
    assert apps.read_desired(fake, APP).state == "stopped"  # a refused start changes nothing
    assert apps.holder(fake, APP).pid == lock_holder.pid


def test_the_launcher_refuses_to_run_an_app_whose_lock_is_held(fake, lock_holder):
    # What start() does not see coming (two starts at once): the launcher itself refuses.
    started = time.monotonic()
    done = subprocess.run(
        [
            str(fake.ops_python),
            "-m",
            apps.LAUNCHER,
            "--lock",
            str(apps.lock_path(fake, APP)),
            "--exit-file",
            str(apps.exit_path(fake, APP)),
            "--mode",
            "realtime",
            "--",
            "spark_apps.ops.click_surge",
            "--trigger",
            "realtime",
        ],
        capture_output=True,
        text=True,
        env=apps.process.app_env(fake),
        timeout=DEADLINE_S,
        check=False,
    )
    assert done.returncode == LOCK_HELD, done.stderr
    assert f'"pid": {lock_holder.pid}' in done.stderr
    assert time.monotonic() - started < 10
    assert read_status(fake, APP) is None  # the app never ran


# -- start, stop, supervise with the fake app ------------------------------------------------------


def test_start_runs_the_app_detached_in_its_own_session_holding_its_lock(fake):
    result = apps.act(fake, APP, "start", knobs={"threshold": 50}, reason="test")
    started = result["result"]["started"]
    pid = started["pid"]
    assert apps.holder(fake, APP).pid == pid and alive(pid)
    assert session_of(pid) == pid != os.getsid(0)
    assert started["mode"] == "realtime"
    # (the fake interpreter put the fake app in the app module's place)
    assert started["argv"][1:] == [
        "-m",
        "fake_app",
        "--trigger",
        "realtime",
        "--trigger-interval",
        f"{registry.app(APP).rtm_interval_s} seconds",
        "--threshold",
        "50",
    ]
    assert "-m adlake.apps.launcher" in apps.log_path(fake, APP).read_text()
    wait_for(lambda: (read_status(fake, APP) or {}).get("argv"), message="no status")
    assert read_status(fake, APP)["argv"] == [
        "--trigger",
        "realtime",
        "--trigger-interval",
        f"{registry.app(APP).rtm_interval_s} seconds",
        "--threshold",
        "50",
    ]
    assert apps.read_desired(fake, APP) == apps.Desired(
        "running", "realtime", {"threshold": 50}, apps.read_desired(fake, APP).updated_at, "test"
    )
    assert "start click_surge (test)" in apps.log_path(fake, APP).read_text()
    wait_for(lambda: apps.app_status(fake, APP)["state"] == "running")
    # a second start is refused and still exactly one process holds the lock
    with pytest.raises(apps.AlreadyRunning, match=f"pid {pid}"):
        apps.act(fake, APP, "start")
    assert apps.holder(fake, APP).pid == pid


def test_stop_is_graceful_when_the_app_exits_on_sigterm(fake):
    pid = apps.start(fake, APP).pid
    wait_for(lambda: read_status(fake, APP))
    result = apps.act(fake, APP, "stop", reason="test")["result"]["stopped"]
    assert (result["how"], result["exit_code"], result["graceful"], result["pid"]) == (
        "exited",
        0,
        True,
        pid,
    )
    assert apps.holder(fake, APP) is None and not alive(pid)
    assert read_status(fake, APP)["state"] == "stopped"
    assert not stop_marker(fake, APP).exists()
    assert apps.read_desired(fake, APP).state == "stopped"
    assert apps.app_status(fake, APP)["state"] == "stopped"
    assert apps.stop(fake, APP).how == "not_running"


def test_stop_kills_an_app_that_ignores_sigterm_after_the_drain_timeout(fake):
    flag(fake, "ignore-sigterm")
    pid = apps.start(fake, APP).pid
    wait_for(lambda: read_status(fake, APP))
    started = time.monotonic()
    result = apps.stop(fake, APP, drain_timeout_s=1.0)
    assert (result.how, result.exit_code, result.graceful) == ("killed", None, False)
    assert result.waited_s >= 1.0 and time.monotonic() - started < 15
    assert apps.holder(fake, APP) is None and not alive(pid)
    assert stop_marker(fake, APP).exists() is False


def test_a_start_that_fails_raises_with_the_apps_log(fake):
    flag(fake, "exit-at-once")
    with pytest.raises(apps.AppStartError, match="(?s)exited with code 3.*failing at start"):
        apps.act(fake, APP, "start")
    # the desired state stays running: the supervisor retries, with backoff
    assert apps.read_desired(fake, APP).state == "running"
    assert apps.app_status(fake, APP)["state"] == "failed"
    assert apps.holder(fake, APP) is None


def test_supervise_restarts_a_killed_app_with_backoff_and_records_why(fake):
    first = apps.act(fake, APP, "start")["result"]["started"]["pid"]
    wait_for(lambda: apps.app_status(fake, APP)["state"] == "running")
    now = time.time()
    assert apps.reconcile(fake, now=now) == []  # healthy: nothing to do

    os.kill(first, signal.SIGKILL)
    wait_for(lambda: apps.holder(fake, APP) is None)
    [restart] = apps.reconcile(fake, now=now + 1)
    assert (restart["action"], restart["ok"], restart["count"]) == ("restart", True, 1)
    assert restart["why"] == "should run and does not"
    assert "ended without an exit record: killed" in restart["error"]
    assert restart["next_allowed_at"] == now + 1 + 30
    second = apps.holder(fake, APP).pid
    assert second not in (first, 0)

    # killed again at once: the next restart waits 30 s, then the one after 60 s
    os.kill(second, signal.SIGKILL)
    wait_for(lambda: apps.holder(fake, APP) is None)
    assert apps.app_status(fake, APP, now=now + 2)["state"] == "restarting"
    assert [a["action"] for a in apps.reconcile(fake, now=now + 2)] == ["wait"]
    assert apps.holder(fake, APP) is None
    [restart] = apps.reconcile(fake, now=now + 31)
    assert (restart["action"], restart["count"], restart["next_allowed_at"]) == (
        "restart",
        2,
        now + 31 + 60,
    )
    record = apps.read_restarts(fake, APP)
    assert (record.count, record.consecutive, record.last_restart_at) == (2, 2, now + 31)
    assert [h["at"] for h in record.history] == [now + 1, now + 31]


def test_supervise_restarts_a_stale_app(fake):
    apps.act(fake, APP, "start", trigger="processing_time")
    wait_for(lambda: apps.app_status(fake, APP)["state"] == "running")
    first = apps.holder(fake, APP).pid
    # 121 s later (as the supervisor sees it), the app's report is too old
    [restart] = apps.reconcile(fake, now=time.time() + 121)
    assert restart["why"].startswith("no report for 12") and restart["ok"]
    assert restart["stopped"]["how"] == "exited" and restart["stopped"]["exit_code"] == 0
    assert apps.holder(fake, APP).pid != first


def test_supervise_stops_an_app_that_should_be_stopped(fake):
    pid = apps.start(fake, APP).pid  # start() leaves the desired state alone: stopped
    [stop] = apps.reconcile(fake)
    assert (stop["action"], stop["result"]["how"], stop["result"]["pid"]) == ("stop", "exited", pid)
    assert apps.holder(fake, APP) is None


def test_a_killed_apps_leftover_processes_are_killed_before_the_next_start(fake, monkeypatch):
    # The app's JVM outlives a SIGKILL of its driver until it notices; a leftover that does not
    # exit must not share the checkpoint with the next run.
    monkeypatch.setattr(apps.process, "LEFTOVER_GRACE_S", 0.5)
    flag(fake, "leave-a-child")
    pid = apps.act(fake, APP, "start")["result"]["started"]["pid"]
    child_file = fake.runtime_dir / "fake-child.pid"
    child = int(wait_for(lambda: child_file.exists() and child_file.read_text()))
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: apps.holder(fake, APP) is None)
    assert alive(child) and session_of(child) == pid
    (fake.runtime_dir / "fake-leave-a-child").unlink()
    [restart] = apps.reconcile(fake)
    assert restart["ok"]
    wait_for(lambda: not alive(child), message=f"leftover {child} still alive")


def test_restart_switches_the_trigger_and_keeps_a_checkpoint_spark_resumes(fake):
    checkpoint = fake.checkpoint_path(APP)
    make_checkpoint(checkpoint, {"page_clicks": {"0": 5, "1": 7}})
    apps.act(fake, APP, "start", trigger="realtime")
    apps.act(fake, APP, "restart", trigger="processing_time")
    assert apps.holder(fake, APP).mode == "processing_time"
    assert "--starting-offsets" not in apps.holder(fake, APP).argv
    assert (checkpoint / "commits" / "0").exists()  # kept
    assert [p.name for p in checkpoint.parent.iterdir() if p.is_dir()] == [APP]


def test_a_switch_spark_cannot_resume_starts_a_new_checkpoint_at_the_committed_offsets(fake):
    app = "attribution"
    checkpoint = fake.checkpoint_path(app)
    committed = {"ad_requests": {"0": 5}, "ad_impressions": {"0": 3}, "ad_callbacks": {"0": 0}}
    make_checkpoint(
        checkpoint,
        committed,
        uncommitted={"ad_requests": {"0": 9}, "ad_impressions": {"0": 4}, "ad_callbacks": {"0": 1}},
    )
    apps.act(fake, app, "start", trigger="processing_time")
    assert "--starting-offsets" not in apps.holder(fake, app).argv  # same shape: kept
    apps.act(fake, app, "restart", trigger="realtime")
    argv = apps.holder(fake, app).argv
    assert json.loads(argv[argv.index("--starting-offsets") + 1]) == committed
    [aside] = [p for p in checkpoint.parent.iterdir() if p.is_dir() and p.name != app]
    assert aside.name.startswith("attribution.processing_time.jvm.")
    assert (aside / "commits" / "0").exists() and not checkpoint.exists()
    record = apps.app_status(fake, app)["checkpoint"]
    assert record["moved_aside"][0]["committed_offsets"] == committed
    # a restart before the new checkpoint commits keeps starting from the same offsets; once it
    # has committed, the offsets are dropped
    apps.act(fake, app, "restart")
    argv = apps.holder(fake, app).argv
    assert json.loads(argv[argv.index("--starting-offsets") + 1]) == committed
    make_checkpoint(checkpoint, {"ad_requests": {"0": 6}})
    apps.act(fake, app, "restart")
    assert "--starting-offsets" not in apps.holder(fake, app).argv
    assert len([p for p in checkpoint.parent.iterdir() if p.is_dir() and p.name != app]) == 1


def make_checkpoint(path: Path, committed: dict, uncommitted: dict | None = None) -> None:
    """A checkpoint's offset and commit logs: batch 0 committed at ``committed``, batch 1
    planned (not committed) at ``uncommitted``."""
    for batch, offsets in enumerate([committed, uncommitted]):
        if offsets is None:
            continue
        (path / "offsets").mkdir(parents=True, exist_ok=True)
        (path / "offsets" / str(batch)).write_text(
            f'v1\n{{"batchWatermarkMs":0,"batchTimestampMs":0,"conf":{{}}}}\n'
            f"{json.dumps(offsets)}\n"
        )
        if batch == 0:
            (path / "commits").mkdir(parents=True, exist_ok=True)
            (path / "commits" / "0").write_text('v1\n{"nextBatchWatermarkMs":0}\n')


def test_committed_offsets_are_those_of_the_last_committed_batch(tmp_path):
    assert apps.committed_offsets(tmp_path / "none") == {}
    make_checkpoint(tmp_path / "cp", {"t": {"0": 5, "1": 2}}, uncommitted={"t": {"0": 9}})
    assert apps.committed_offsets(tmp_path / "cp") == {"t": {"0": 5, "1": 2}}


# -- the status listener's heartbeat ---------------------------------------------------------------


def test_an_idle_query_refreshes_its_status_with_a_heartbeat(settings):
    from spark_apps.common.streaming.listener import StatusReporter

    reporter = StatusReporter(settings, "heartbeat-test", "processing_time")
    write_status(
        settings,
        "heartbeat-test",
        {"state": "starting", "mode": "processing_time", "batch_id": 3},
        now=100.0,
    )
    reporter.heartbeat(now=250.0)
    status = read_status(settings, "heartbeat-test")
    assert (
        status["state"],
        status["batch_id"],
        status["written_at"],
        status["last_heartbeat_at"],
    ) == ("running", 3, 250.0, 250.0)


# -- what the lifecycle refuses and withholds ------------------------------------------------------

SECRET = "user_ip: '203.0.113.7'"


def test_the_supervisors_xcom_and_log_hold_no_apps_error_nor_command_line(fake, capsys):
    # The apps_supervisor DAG is not the app's: a user refused the app's DAG may read it.
    apps.write_desired(fake, APP, apps.Desired("running", "realtime", {}, 0, "test"))
    apps.state.write_json(
        apps.exit_path(fake, APP),
        {"pid": 0, "started_at": 1.0, "code": 1, "error": f"ValueError: bad record {SECRET}"},
    )
    shown = apps.supervise(fake)
    assert shown == [{"app": APP, "action": "restart", "ok": True, "count": 1,
                      "next_allowed_at": shown[0]["next_allowed_at"],
                      "details": "on the app's card"}]  # fmt: skip
    log = capsys.readouterr().out
    assert "[adlake.apps] supervise:" in log
    assert "203.0.113.7" not in log + json.dumps(shown)
    assert "--trigger" not in log + json.dumps(shown)  # the started app's argv
    # what was withheld is where the app's own DAG guards it: its restarts record (the card)
    assert SECRET in apps.read_restarts(fake, APP).last_error


@pytest.mark.parametrize(
    ("trigger", "knobs", "refusal"),
    [
        ("processing_time", {"ttl_s": 0}, "ttl_s=0 must exceed 2 * window_s + lateness_s (630)"),
        ("processing_time", {"window_s": 2000}, "ttl_s=3600 must exceed 2 * window_s + lateness_s"),
        ("realtime", {"engine": "python"}, "engine python runs in micro-batches only"),
    ],
)
def test_a_knob_combination_the_app_cannot_run_is_refused_before_anything_is_written(
    fake, trigger, knobs, refusal
):
    with pytest.raises(apps.InvalidRequest, match=re.escape(f"knobs of attribution: {refusal}")):
        apps.act(fake, "attribution", "start", trigger=trigger, knobs=knobs)
    assert not fake.apps_dir.exists() or not list(fake.apps_dir.iterdir())  # nothing recorded
    assert apps.holder(fake, "attribution") is None
    # the app's own flags meet the same rule (its runner, as a hand run parses them)
    from spark_apps.common.streaming.runner import parse_args
    from spark_apps.ops.attribution import SPEC

    flags = apps.app_argv("attribution", trigger, apps.check_knobs("attribution", knobs))
    with pytest.raises(SystemExit):
        parse_args(SPEC, flags)


def test_a_desired_running_state_its_rules_refuse_is_left_alone(settings):
    # written before the rule existed: restarting it would crash-loop, so nothing acts on it
    path = settings.apps_dir / "attribution.desired.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"state": "running", "trigger": "processing_time", "knobs": {"ttl_s": 0}}')
    desired = apps.read_desired(settings, "attribution")
    assert desired.state == apps.state.UNKNOWN and "ttl_s=0 must exceed" in desired.reason
    [left] = apps.reconcile(settings)
    assert (left["app"], left["action"], left["ok"]) == ("attribution", "none", False)


def test_an_app_is_not_given_the_alerts_webhook_url(settings):
    secret = settings.with_overrides(alerts_webhook_url="https://hooks.invalid/T0K3N")
    env = apps.process.app_env(secret)
    assert not [name for name, value in env.items() if "T0K3N" in value]
    assert load_settings(env).alerts_webhook_url == ""  # the app still loads its settings
