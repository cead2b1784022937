"""The local profile's Airflow auth manager: Airflow's ``SimpleAuthManager`` (users and roles from
``[core] simple_auth_manager_users``, passwords from its file) and a list, per user, of DAGs that
user may not touch at all.

``SimpleAuthManager`` grants by role only: every ``VIEWER`` reads every DAG, every ``USER``
triggers every DAG. It narrows a user to some DAGs only in multi-team mode, with a DAG bundle per
team, which Adlake's one generated DAG folder does not fit. :class:`AdlakeAuthManager` adds the
file :func:`denied_dags_path` (``<runtime>/airflow/denied_dags.json``), a JSON object from a user
name to the DAG ids refused to that user::

    {"analyst": ["app_attribution", "lake_daily"]}

Every request of that user about one of those DAGs is refused, whatever the method and the part
of the DAG (its runs, task instances, logs, code): :meth:`AdlakeAuthManager.is_authorized_dag`
answers False; everything else is ``SimpleAuthManager``'s answer. Airflow filters the DAG lists
through the same method (``filter_authorized_dag_ids``), so a refused DAG is missing from the
user's DAG list, its REST API answers 403, and the Adlake plugin's pages
(:mod:`adlake.ui.access`) leave out the apps and tables of that DAG.

The file is optional (none: nobody is refused anything beyond their role). Its modification time
and size are checked at each decision and it is read again when they change, so an edit holds
from the next request on, without a restart. A file that cannot be read or is not such an object
refuses every DAG to every user, the admin too, and says why in the log: a damaged deny list must
not open what it closed.

>>> rules = DenyList.parse('{"analyst": ["app_attribution"]}')
>>> rules("analyst", "app_attribution"), rules("analyst", "lake_hourly"), rules("v", "x")
(True, False, False)
>>> DenyList.parse('{"analyst": "app_attribution"}') is None  # not a list: damaged
True
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path

from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager

from adlake.config import Settings, load_settings

log = logging.getLogger(__name__)

DENIED_DAGS_FILE = "denied_dags.json"


def denied_dags_path(settings: Settings) -> Path:
    """Where the DAGs refused per user are listed (beside Airflow's home and the passwords)."""
    return settings.runtime_dir / "airflow" / DENIED_DAGS_FILE


class DenyList:
    """Whether a user is refused a DAG, per :func:`denied_dags_path`'s file, read again whenever
    it changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._seen: tuple | None = None
        self._rules: Callable[[str, str], bool] = _NOBODY_REFUSED
        self._lock = threading.Lock()

    @staticmethod
    def parse(text: str) -> Callable[[str, str], bool] | None:
        """``(user, dag_id) -> refused`` of the file's ``text``; None if the text is not an
        object of lists of DAG ids."""
        try:
            value = json.loads(text)
        except ValueError:
            return None
        if not isinstance(value, dict) or not all(
            isinstance(ids, list) and all(isinstance(i, str) for i in ids) for ids in value.values()
        ):
            return None
        denied = {user: frozenset(ids) for user, ids in value.items()}
        return lambda user, dag_id: dag_id in denied.get(user, ())

    def __call__(self, user: str, dag_id: str) -> bool:
        try:
            stat = self.path.stat()
            seen: tuple | None = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        except FileNotFoundError:
            seen = None
        except OSError as error:
            log.error("DAG access refused to everyone: cannot read %s (%s)", self.path, error)
            return True
        with self._lock:
            if seen != self._seen:
                self._rules = self._load(seen)
                self._seen = seen
            return self._rules(user, dag_id)

    def _load(self, seen: tuple | None) -> Callable[[str, str], bool]:
        if seen is None:
            return _NOBODY_REFUSED
        try:
            rules = DenyList.parse(self.path.read_text())
        except OSError as error:
            log.error("DAG access refused to everyone: cannot read %s (%s)", self.path, error)
            return _EVERYTHING_REFUSED
        if rules is None:
            log.error(
                "DAG access refused to everyone: %s is not a JSON object of user name to a "
                'list of DAG ids ({"analyst": ["app_attribution"]})',
                self.path,
            )
            return _EVERYTHING_REFUSED
        return rules


def _NOBODY_REFUSED(user: str, dag_id: str) -> bool:
    return False


def _EVERYTHING_REFUSED(user: str, dag_id: str) -> bool:
    return True


class AdlakeAuthManager(SimpleAuthManager):
    """``SimpleAuthManager``, and the DAGs :func:`denied_dags_path` refuses a user (see the
    module). Configured by ``AIRFLOW__CORE__AUTH_MANAGER=adlake.airflow.auth.AdlakeAuthManager``
    (:func:`adlake.local.platform.airflow_env`)."""

    # The deny list's file; None: :func:`denied_dags_path` of the process's settings, resolved
    # at the first decision (a test points it elsewhere).
    denied_dags_file: Path | None = None
    _deny_list: DenyList | None = None

    def refuses(self, user: str, dag_id: str) -> bool:
        """Whether the deny list refuses ``dag_id`` to the user named ``user``."""
        path = self.denied_dags_file or denied_dags_path(load_settings())
        if self._deny_list is None or self._deny_list.path != path:
            self._deny_list = DenyList(path)
        return self._deny_list(user, dag_id)

    def is_authorized_dag(self, *, method, user, access_entity=None, details=None) -> bool:
        # A request about one DAG (details.id) is refused if the list refuses it to the user;
        # one about DAGs in general (no id: a list, filtered DAG by DAG through this method)
        # is left to the role.
        if details is not None and details.id and self.refuses(user.get_name(), details.id):
            return False
        return super().is_authorized_dag(
            method=method, user=user, access_entity=access_entity, details=details
        )
