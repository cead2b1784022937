"""The lifecycle's records when they go wrong (``adlake.apps``, no Spark, no broker): a desired
state that cannot be read leaves a running app alone, one app's damaged record or full disk
does not stop the supervision of the others, and every record is replaced whole and durably."""

from __future__ import annotations

import errno
import json
import os
import time

import pytest

from adlake import apps
from adlake.apps import launcher
from adlake.status import status_path, write_status
from tests.include.test_apps import fake, settings  # noqa: F401 - fixtures
from tests.support.lock_holder import lock_held

APP = "click_surge"
NOW = 1_800_000_000.0


def full_disk(monkeypatch, suffix: str = "") -> None:
    """``os.replace`` onto a name ending with ``suffix`` fails as on a full disk."""
    replace = os.replace

    def no_space(src, dst, *args, **kwargs):
        if str(dst).endswith(suffix):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))
        return replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", no_space)


def test_a_desired_state_that_cannot_be_read_leaves_a_running_app_alone(settings):
    path = settings.apps_dir / f"{APP}.desired.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    with lock_held(apps.lock_path(settings, APP)) as app:
        write_status(settings, APP, {"state": "running", "mode": "realtime"})
        for damaged in [
            '{"state": "runn',  # cut short
            "",
            '["running"]',
            '{"state": "paused"}',
            '{"state": "running", "knobs": [5000]}',
            # once a ValueError out of the supervisor's pass
            '{"state": "running", "updated_at": "yesterday"}',
        ]:
            path.write_text(damaged)
            [left] = apps.reconcile(settings, now=time.time())
            assert (left["app"], left["action"], left["ok"], left["state"]) == (
                APP,
                "none",
                False,
                "running",
            ), damaged
            assert left["why"].startswith(f"desired state unknown: {path}")
            assert left["why"].endswith("left as it is")
            assert app.poll() is None, f"the app was stopped on {damaged!r}"
            status = apps.app_status(settings, APP)
            assert (status["state"], status["desired"]["state"]) == ("running", "unknown")
            assert status["desired"]["reason"].startswith(str(path))
            assert status["holder"]["pid"] == app.pid

        # No record at all: the app was never started through the lifecycle, so it should not
        # run, and a copy that holds the lock is stopped.
        path.unlink()
        assert apps.read_desired(settings, APP).state == "stopped"
        [stop] = apps.reconcile(settings, now=time.time())
        assert (stop["action"], stop["ok"], stop["result"]["pid"]) == ("stop", True, app.pid)
        app.wait(timeout=30)


def test_a_damaged_restarts_record_of_one_app_does_not_stop_the_pass(settings):
    # Both apps should run and do not; no interpreter, so a restart fails without a process.
    settings = settings.with_overrides(ops_python=settings.runtime_dir / "no-python")
    for app, trigger in (("attribution", "processing_time"), (APP, "realtime")):
        apps.write_desired(settings, app, apps.Desired("running", trigger, {}, 0, "test"))
    damaged = {"count": "3", "consecutive": "x", "next_allowed_at": "soon", "history": "gone"}
    (settings.apps_dir / "attribution.restarts.json").write_text(json.dumps(damaged))
    waiting = apps.Restarts(count=1, consecutive=1, next_allowed_at=NOW + 45)
    apps.write_restarts(settings, APP, waiting)

    restart, wait = apps.reconcile(settings, now=NOW)
    assert (restart["app"], restart["action"], restart["ok"]) == ("attribution", "restart", False)
    assert "no-python does not exist" in restart["start_error"]
    assert (restart["count"], restart["next_allowed_at"]) == (1, NOW + 30)
    assert (wait["app"], wait["action"], wait["next_allowed_at"]) == (APP, "wait", NOW + 45)
    record = apps.read_restarts(settings, "attribution")
    assert (record.count, record.consecutive, len(record.history)) == (1, 1, 1)
    assert "no-python does not exist" in record.last_error


def test_a_full_disk_keeps_the_restarts_record_and_the_pass_goes_on(fake, monkeypatch):
    # attribution should run and does not; click_surge waits for its backoff
    for app, trigger in (("attribution", "processing_time"), (APP, "realtime")):
        apps.write_desired(fake, app, apps.Desired("running", trigger, {}, 0, "test"))
    before = apps.Restarts(count=2, reason="earlier", history=[{"at": 1.0}, {"at": 2.0}])
    apps.write_restarts(fake, "attribution", before)
    apps.write_restarts(fake, APP, apps.Restarts(count=1, consecutive=1, next_allowed_at=NOW + 45))
    full_disk(monkeypatch, ".restarts.json")

    restart, wait = apps.reconcile(fake, now=NOW)
    # the app was started all the same, and the pass says what was not recorded
    assert (restart["app"], restart["action"], restart["ok"]) == ("attribution", "restart", False)
    assert restart["started"]["pid"] == apps.holder(fake, "attribution").pid
    assert "No space left on device" in restart["record_error"]
    assert (wait["app"], wait["action"]) == (APP, "wait")
    assert apps.read_restarts(fake, "attribution") == before
    assert sorted(p.name for p in fake.apps_dir.iterdir() if p.name.endswith(".tmp")) == []


@pytest.mark.parametrize("writer", ["record", "status", "exit"])
def test_every_record_is_replaced_whole_and_durably(settings, monkeypatch, writer):
    path = {
        "record": settings.apps_dir / f"{APP}.restarts.json",
        "status": status_path(settings, APP),
        "exit": apps.exit_path(settings, APP),
    }[writer]

    def write(value: int) -> None:
        if writer == "record":
            apps.state.write_json(path, {"value": value})
        elif writer == "status":
            write_status(settings, APP, {"value": value})
        else:
            launcher.write_exit(path, {"value": value})

    fsync, synced = os.fsync, []

    def recording_fsync(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    write(1)
    # the new content reached the disk under its temporary name, then the rename did
    directory = os.path.realpath(path.parent)
    [content, rename] = synced
    assert os.path.dirname(content) == directory and content.endswith(".tmp")
    assert rename == directory
    assert json.loads(path.read_text())["value"] == 1

    full_disk(monkeypatch)
    with pytest.raises(OSError) as failed:
        write(2)
    assert failed.value.errno == errno.ENOSPC
    assert json.loads(path.read_text())["value"] == 1
    assert [p.name for p in path.parent.iterdir()] == [path.name]
