"""One instance of each app, known by identity (``adlake.apps``, no Spark, no broker): a lock
record is believed only for the process that wrote it (its pid and its start), an app whose
process cannot be seen from here is shown as running elsewhere and never signalled, the launcher
takes its record with it, and an app started by hand takes the same lock as a managed one."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from adlake import apps
from adlake.apps import cli
from adlake.apps.launcher import LOCK_HELD
from adlake.config import REPO_ROOT
from adlake.processes import alive, identity, started_at
from tests.include.test_apps import fake, settings  # noqa: F401 - fixtures
from tests.support.lock_holder import lock_held

APP = "click_surge"


@pytest.fixture
def sleeper():
    """A live process that has nothing to do with any app."""
    proc = subprocess.Popen(["sleep", "600"])
    yield proc
    proc.kill()
    proc.wait()


def test_a_record_naming_a_live_process_started_at_another_time_is_not_the_app(
    settings,
    sleeper,
    monkeypatch,
):
    monkeypatch.setattr(apps.process, "HOLDER_TIMEOUT_S", 0.1)  # how long a stale record waits
    # The lock is held (by a process not seen here) and its record names a pid that is alive,
    # but as a process started long after the record's: the pid was reused.
    stale = {
        "pid": sleeper.pid,
        "mode": "realtime",
        "started_at": time.time() - 1000,
        "argv": ["app"],
        **identity(),
        "proc_started_at": started_at(sleeper.pid) - 1000,
    }
    apps.write_desired(settings, APP, apps.Desired("stopped", "realtime", {}, 0, "test"))
    with lock_held(apps.lock_path(settings, APP), stale):
        current = apps.holder(settings, APP)
        assert (current.pid, current.mode, current.started_at) == (None, None, None)
        assert f"its record names pid {sleeper.pid}, which is gone or another" in current.elsewhere
        # should not run, but what holds the lock cannot be reached: left as it is
        [left] = apps.reconcile(settings)
        assert (left["action"], left["ok"]) == ("none", False)
        assert left["why"].startswith("running elsewhere: the lock is held by a process not seen")
        with pytest.raises(apps.AppStopError, match="cannot be signalled from here"):
            apps.stop(settings, APP, drain_timeout_s=0.1)
        assert sleeper.poll() is None, "an unrelated process was signalled"


def test_an_app_in_another_pid_namespace_is_shown_running_elsewhere_at_once(settings):
    from adlake.ui.apps import app_view

    started = time.time() - 60
    there = {
        "pid": 7,
        "mode": "processing_time",
        "started_at": started,
        "argv": ["python", "-m", "spark_apps.ops.click_surge"],
        **identity(),
        "pid_ns": "pid:[1]",  # not ours
        "proc_started_at": started,
    }
    with lock_held(apps.lock_path(settings, APP), there):
        begun = time.monotonic()
        current = apps.holder(settings, APP)
        assert time.monotonic() - begun < 1  # no wait for a record that will never be seen
        assert (current.pid, current.mode, current.started_at) == (None, "processing_time", started)
        assert current.elsewhere == "pid 7 on another host or in another PID namespace"
        view = app_view(settings, APP, time.time())
        assert (view["state"], view["holder"]["pid"]) == ("running", None)
        assert view["why"].startswith("running (elsewhere): pid 7 on another host")
        assert 60 <= view["uptime_s"] < 120
        [row] = cli.with_lifecycle(settings, [])  # make status
        assert (row["app"], row["app_state"], row["pid"]) == (APP, "running", "elsewhere")
        with pytest.raises(apps.AlreadyRunning, match="elsewhere: pid 7 .*, mode processing_time"):
            apps.act(settings, APP, "start")

    # held by a process that wrote no record at all: the page does not wait 2 s for one, and
    # shows no pid 0, no start in 1970, no mode "?"
    with lock_held(apps.lock_path(settings, APP), None):
        begun = time.monotonic()
        view = app_view(settings, APP, time.time())
        assert time.monotonic() - begun < 1.5
        assert view["holder"] == {
            "pid": None,
            "mode": None,
            "started_at": None,
            "argv": [],
            "elsewhere": "the lock is held by a process not seen here",
        }
        assert (view["state"], view["uptime_s"]) == ("running", None)


QUICK_APP = """
import json, pathlib, sys
lock = pathlib.Path(sys.argv[1])
print("pid", json.loads(lock.read_text())["pid"], flush=True)
if sys.argv[2:] == ["rewrite"]:  # someone else's record now: the launcher must leave it
    lock.write_text(json.dumps({"pid": 1, "argv": ["rewritten"]}))
"""


def run_module(settings, tmp_path, module: str, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "quick_app.py").write_text(QUICK_APP)
    (tmp_path / "hand_app.py").write_text(HAND_APP)
    # the module beside this test's own adlake and spark_apps (app_env drops PYTHONPATH)
    path = os.pathsep.join(str(p) for p in (tmp_path, REPO_ROOT / "include", REPO_ROOT))
    env = {**apps.process.app_env(settings), "PYTHONPATH": path}
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def launched(settings, module: str, *args: str) -> list[str]:
    """The launcher's command line running ``module`` as the app holding click_surge's lock."""
    lock, exit_file = apps.lock_path(settings, APP), apps.exit_path(settings, APP)
    return ["adlake.apps.launcher", "--lock", str(lock), "--exit-file", str(exit_file),
            "--mode", "realtime", "--", module, *args]  # fmt: skip


def test_the_launcher_blanks_its_lock_record_as_it_exits_if_still_its_own(settings, tmp_path):
    lock = apps.lock_path(settings, APP)
    done = run_module(settings, tmp_path, *launched(settings, "quick_app", str(lock)))
    assert done.returncode == 0, done.stderr
    pid = int(done.stdout.split("pid ")[1].split()[0])  # its record, while it ran
    assert lock.read_text() == ""
    assert apps.state.read_json(apps.exit_path(settings, APP))["pid"] == pid
    # the exit path told apart from a kill: an exit record, no lock record
    assert apps.supervisor._last_error(settings, APP, None, None) == "exited with code 0"

    done = run_module(settings, tmp_path, *launched(settings, "quick_app", str(lock), "rewrite"))
    assert done.returncode == 0, done.stderr
    assert apps.state.read_json(lock) == {"pid": 1, "argv": ["rewritten"]}


HAND_APP = """
import os, sys
from adlake import apps, registry, spark_session
from adlake.config import load_settings
from spark_apps.common.streaming.runner import StreamingApp, run

def no_spark(*args, **kwargs):  # where the query would start: who holds the lock now?
    holder = apps.holder(load_settings(), "click_surge")
    print("query starts; lock held by", "me" if holder and holder.pid == os.getpid() else holder, flush=True)
    sys.exit(0)

spark_session.get_session = no_spark
spec = StreamingApp(registry.app("click_surge"), "", lambda *_: None, lambda trigger: "update")
sys.exit(run(spec, ["--trigger", "processing_time", *sys.argv[1:]]))
"""


def test_an_app_started_by_hand_takes_the_managed_apps_lock(settings, tmp_path):
    lock = apps.lock_path(settings, APP)
    # a second copy while the managed one runs: refused before anything starts, naming it
    with lock_held(lock) as managed:
        begun = time.monotonic()
        refused = run_module(settings, tmp_path, "hand_app")
        assert refused.returncode == LOCK_HELD, refused.stdout + refused.stderr
        assert time.monotonic() - begun < 20
        assert "query starts" not in refused.stdout
        assert f"click_surge is running already, pid {managed.pid}, started " in refused.stderr
        assert "mode realtime, argv holder" in refused.stderr
    # by hand with nobody running: it holds the lock for its life, then gives it back
    alone = run_module(settings, tmp_path, "hand_app")
    assert alone.stdout == "query starts; lock held by me\n", alone.stderr
    assert apps.holder(settings, APP) is None and lock.read_text() == ""
    # run by the launcher: the lock it holds is the app's own
    managed = run_module(settings, tmp_path, *launched(settings, "hand_app"))
    assert managed.stdout.endswith("query starts; lock held by me\n"), managed.stderr


@pytest.mark.parametrize("claimed", ["nothing", "the victim's identity"])
def test_a_lock_record_naming_a_process_that_does_not_hold_the_lock_is_never_signalled(
    settings, sleeper, monkeypatch, claimed
):
    # Anyone who can write the lock file can name any pid in it, with identity fields or
    # without: only the process the kernel says holds the flock may be signalled.
    monkeypatch.setattr(apps.process, "HOLDER_TIMEOUT_S", 0.1)
    forged = {"pid": sleeper.pid, "mode": "realtime", "started_at": time.time(), "argv": ["x"]}
    if claimed != "nothing":
        forged |= {**identity(), "proc_started_at": started_at(sleeper.pid)}
    apps.write_desired(settings, APP, apps.Desired("running", "realtime", {}, 0, "test"))
    with lock_held(apps.lock_path(settings, APP), forged):
        assert apps.holder(settings, APP).pid is None
        [left] = apps.reconcile(settings, now=time.time() + 10_000)  # stale, were it the app
        assert (left["action"], left["ok"]) == ("none", False)
        apps.write_desired(settings, APP, apps.Desired("stopped", "realtime", {}, 0, "test"))
        with pytest.raises(apps.AppStopError, match="cannot be signalled from here"):
            apps.stop(settings, APP, drain_timeout_s=0.1)
        assert sleeper.poll() is None, "a process that does not hold the lock was signalled"


def test_a_second_driver_on_the_apps_checkpoint_is_refused_whatever_its_query_name(
    settings, tmp_path
):
    from adlake.apps.launcher import checkpoint_lock

    checkpoint = settings.checkpoint_path(APP)
    with lock_held(checkpoint_lock(checkpoint)) as managed:
        refused = run_module(
            settings, tmp_path, "hand_app", "--query-name", "probe", "--checkpoint", APP
        )
        assert refused.returncode == LOCK_HELD, refused.stdout + refused.stderr
        assert "query starts" not in refused.stdout
        assert f"its checkpoint {checkpoint} is in use by pid {managed.pid}" in refused.stderr
        # nor does the lifecycle start the managed app on it (or move it aside) meanwhile
        with pytest.raises(apps.AppStartError, match="checkpoint .* is in use by another driver"):
            apps.start(settings, APP)
    # another name on another checkpoint is another app: it runs
    alone = run_module(settings, tmp_path, "hand_app", "--query-name", "probe", "--checkpoint", "p")
    assert alone.stdout == "query starts; lock held by None\n", alone.stderr


def test_a_start_reaps_only_what_the_app_left_behind_not_what_a_record_names(fake):
    # A killed app's JVM stays in its session, which the next start reaps; a record naming
    # another session (here: one whose leader has exited, leaving a sleep behind) reaps nothing.
    leader = subprocess.run(
        ["setsid", "sh", "-c", "sleep 600 >/dev/null 2>&1 & echo $! $$"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    orphan, session = (int(n) for n in leader.stdout.split())
    try:
        forged = {"pid": session, "started_at": time.time() - 60, **identity()}
        apps.state.write_json(apps.lock_path(fake, APP), forged)
        apps.start(fake, APP)
        assert alive(orphan), "a process the app did not start was killed as its leftover"
    finally:
        os.kill(orphan, 9)
