"""The documented way to run an app by hand, ``python -m spark_apps.ops.click_surge``, takes the
app's lock as a managed start does: while the app runs, a copy is refused at once, before Spark
starts, naming the one running (two drivers on one checkpoint otherwise)."""

from __future__ import annotations

from adlake import apps
from adlake.apps.launcher import LOCK_HELD
from adlake.status import read_status
from tests.conftest import private_settings
from tests.spark_apps.ops.conftest import log_tail, start_app
from tests.support.lock_holder import lock_held


def test_a_copy_started_by_hand_is_refused_while_the_app_runs(tmp_path):
    settings = private_settings(tmp_path / "runtime")
    with lock_held(apps.lock_path(settings, "click_surge")) as running:
        copy = start_app("spark_apps.ops.click_surge", settings, "--trigger", "processing_time")
        assert copy.wait(timeout=60) == LOCK_HELD, log_tail(copy)
    said = copy.log_path.read_text()
    assert f"click_surge is running already, pid {running.pid}, started " in said
    assert "mode realtime, argv holder" in said
    assert read_status(settings, "click_surge") is None  # it never ran
