"""The failure callback of every Adlake task: an Airflow notifier that turns the failed task's
context into an alert (:func:`adlake.alerts.task_failure_alert`) and sends it to the alert sinks
(:func:`adlake.alerts.send`: the local file, and the ``adlake_alerts`` webhook when there is
one). Set on every DAG's ``default_args`` by :mod:`adlake.airflow.factory`; it runs in the task's
own process after the task failed (not on a retry), so its alert names the last try."""

from __future__ import annotations

from airflow.sdk.bases.notifier import BaseNotifier


class AlertNotifier(BaseNotifier):
    """Sends the alert of a failed task. A sink that fails is logged in the task's log and never
    changes the task's state."""

    def notify(self, context) -> None:
        from adlake import alerts
        from adlake.config import load_settings

        settings = load_settings()
        outcome = alerts.send(settings, alerts.task_failure_alert(settings, context))
        self.log.info(
            "adlake alert %s: %s%s",
            outcome["alert"]["group"],
            "sent" if outcome["sent"] else f"held back ({outcome['suppressed']} in its window)",
            f", webhook {outcome['webhook']}" if outcome["webhook"] else "",
        )
