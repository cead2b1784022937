"""Who may see and do what on the plugin's pages: Airflow's auth manager decides, DAG by DAG, as
for Airflow's own pages and REST API (``get_auth_manager().is_authorized_dag``).

* **The pages and their JSON at all**: a user Airflow lets see its plugins' views
  (``AccessView.PLUGINS``; the app's dependency, :func:`adlake.ui.app.create_app`). A user
  without a role is refused (403).
* **A streaming app** (its card: argv, log path, errors, tracebacks; its status JSON): a user who
  may read its DAG ``app_<name>`` (``GET``). The app is left out of the list for anyone else, and
  its own status route answers 403. **Its buttons**: a user who may run that DAG (``POST`` on
  ``DagAccessEntity.RUN``, the check of Airflow's trigger route, which the buttons' requests go
  to: Airflow refuses them there whatever the page shows). The JSON says so per app
  (``can_act``), so the page disables what the user may not do.
* **A table's quality** (its row on the Data quality page, its runs, its Data Docs pages): a user
  who may read a DAG whose quality gate validates it (:func:`adlake.airflow.factory.gate_dag_ids`:
  ``lake_hourly`` and/or ``lake_daily`` for a gold table, ``view_<name>`` for a view); of its
  runs, those of DAGs the user may read (GX's run name is ``<dag_id>__<run_id>``). A suite no gate
  of the registry validates, GX's Data Docs index (which lists every table's runs) and any other
  page of the site are for a user who may read every gate's DAG; GX's ``static/`` files for any
  user.

Each answer is asked once per request (:class:`DagAccess`); :class:`Grants` is a fixed table of
answers with the same methods, for the doctests and tests.

>>> grants = Grants(read={"lake_hourly", "app_click_surge"})
>>> tables = TableAccess(grants)
>>> tables.may_see("page_traffic"), tables.may_see("attribution_funnel")  # hourly; daily only
(True, False)
>>> tables.may_see_run("campaign_delivery", "lake_daily__scheduled__2026-11-20T00:00:00+00:00")
False
>>> tables.may_open("validations/page_traffic/lake_hourly__r1/20261121T140500Z/x.html")
True
>>> tables.may_open("validations/page_traffic/lake_daily__r1/20261121T140500Z/x.html")
False
>>> tables.may_open("static/styles/data_docs_custom_styles.css"), tables.may_open("index.html")
(True, False)
"""

from __future__ import annotations

import base64
import json
import posixpath
from collections.abc import Iterable

from fastapi import Request

# What the app's login dependency leaves on the request for the routes: the signed-in user.
USER_STATE = "adlake_user"


def signed_in_dependency():
    """The app's login dependency: Airflow's ``get_user`` (401 without a session, 403 with a bad
    one), the user kept on the request for :func:`dag_access`. Imports Airflow when called."""
    from airflow.api_fastapi.core_api.security import get_user
    from fastapi import Depends

    # A default, not an annotation: this module's annotations are strings, which FastAPI
    # resolves in its globals, where Airflow's get_user is not.
    def signed_in(request: Request, user=Depends(get_user)) -> None:  # noqa: B008
        setattr(request.state, USER_STATE, user)

    return signed_in


def plugins_view_dependency():
    """Airflow's own check of its plugins' views (``AccessView.PLUGINS``): 403 for a user whose
    role does not give it. Imports Airflow when called."""
    from airflow.api_fastapi.auth.managers.models.resource_details import AccessView
    from airflow.api_fastapi.core_api.security import requires_access_view

    return requires_access_view(AccessView.PLUGINS)


class DagAccess:
    """What ``user`` may do with DAGs, as Airflow's auth manager answers, each question asked
    once."""

    def __init__(self, user: object) -> None:
        self.user = user
        self._answers: dict[tuple[str, bool], bool] = {}

    def may_read(self, dag_id: str) -> bool:
        """May the user see ``dag_id`` (``GET``)?"""
        return self._ask(dag_id, trigger=False)

    def may_trigger(self, dag_id: str) -> bool:
        """May the user run ``dag_id`` (``POST`` on its runs, Airflow's trigger route's check)?"""
        return self._ask(dag_id, trigger=True)

    def _ask(self, dag_id: str, trigger: bool) -> bool:
        if (dag_id, trigger) not in self._answers:
            self._answers[dag_id, trigger] = self._authorized(dag_id, trigger)
        return self._answers[dag_id, trigger]

    def _authorized(self, dag_id: str, trigger: bool) -> bool:
        from airflow.api_fastapi.app import get_auth_manager
        from airflow.api_fastapi.auth.managers.models.resource_details import (
            DagAccessEntity,
            DagDetails,
        )
        from airflow.models.dag import DagModel

        return get_auth_manager().is_authorized_dag(
            method="POST" if trigger else "GET",
            user=self.user,
            access_entity=DagAccessEntity.RUN if trigger else None,
            details=DagDetails(id=dag_id, team_name=DagModel.get_team_name(dag_id)),
        )


class Grants:
    """Fixed answers: the DAGs in ``read`` may be seen, those in ``trigger`` run too."""

    def __init__(self, read: Iterable[str] = (), trigger: Iterable[str] = ()) -> None:
        self.trigger = set(trigger)
        self.read = set(read) | self.trigger

    def may_read(self, dag_id: str) -> bool:
        return dag_id in self.read

    def may_trigger(self, dag_id: str) -> bool:
        return dag_id in self.trigger


def dag_access(request: Request) -> DagAccess:
    """The signed-in user's :class:`DagAccess` (a route's dependency)."""
    return DagAccess(getattr(request.state, USER_STATE))


def run_dag_id(run_name: str) -> str | None:
    """The DAG of a GX run name ``<dag_id>__<run_id>`` (a DAG id has no ``__``); None for a run
    named otherwise (a validation run by hand).

    >>> run_dag_id("lake_hourly__scheduled__2026-11-21T13:00:00+00:00"), run_dag_id("mine")
    ('lake_hourly', None)
    """
    dag_id, sep, run_id = run_name.partition("__")
    return dag_id if sep and dag_id and run_id else None


class TableAccess:
    """Which tables' quality (and which of their runs and Data Docs pages) a user may see, from
    ``dags`` (a :class:`DagAccess` or :class:`Grants`)."""

    def __init__(self, dags: DagAccess | Grants) -> None:
        from adlake.airflow.factory import gate_dag_ids

        self.dags = dags
        self.gates = gate_dag_ids()

    def may_see_everything(self) -> bool:
        """May the user read every DAG that validates a table?"""
        return all(self.dags.may_read(d) for d in sorted(set().union(*self.gates.values())))

    def may_see(self, table: str) -> bool:
        """May the user see ``table``'s quality: a DAG of its gates readable (a suite no gate
        validates: every gate's DAG readable)?"""
        if table not in self.gates:
            return self.may_see_everything()
        return any(self.dags.may_read(d) for d in sorted(self.gates[table]))

    def may_see_run(self, table: str, run_name: str) -> bool:
        """May the user see ``table``'s run ``run_name``: the table, and the run's DAG if the name
        says which?"""
        dag_id = run_dag_id(run_name)
        return self.may_see(table) and (dag_id is None or self.dags.may_read(dag_id))

    def may_open(self, path: str) -> bool:
        """May the user open the Data Docs site's file at ``path`` (relative to the site, as
        requested: normalized here, so ``static/../index.html`` is the index)? GX's layout:
        ``validations/<suite>/<run name>/<run time>/<batch>.html``,
        ``expectations/<suite>.html``, ``static/…``, the ``index.html`` of every run."""
        parts = [p for p in posixpath.normpath("/" + path).split("/") if p]
        if parts[:1] == ["static"]:
            return True
        if parts[:1] == ["validations"] and len(parts) >= 3:
            return self.may_see_run(parts[1], parts[2])
        if parts[:1] in (["validations"], ["expectations"]) and len(parts) == 2:
            return self.may_see(parts[1].removesuffix(".html"))
        return self.may_see_everything()


def user_subject(user: object) -> str:
    """``user`` as a URL-safe text: the claims Airflow's auth manager puts in its own session
    token for them (``serialize_user``), as base64url JSON. Not a secret and not a credential
    by itself: a Data Docs link signs it (:func:`adlake.ui.data_docs.sign`)."""
    from airflow.api_fastapi.app import get_auth_manager

    claims = json.dumps(get_auth_manager().serialize_user(user), sort_keys=True)
    return base64.urlsafe_b64encode(claims.encode()).decode().rstrip("=")


def subject_user(subject: str) -> object | None:
    """The user :func:`user_subject` wrote as ``subject`` (the auth manager's
    ``deserialize_user``), or None if it is not one."""
    from airflow.api_fastapi.app import get_auth_manager

    try:
        claims = json.loads(base64.urlsafe_b64decode(subject + "=" * (-len(subject) % 4)))
        return get_auth_manager().deserialize_user(claims)
    except (ValueError, LookupError, TypeError):
        return None


def may_open_data_docs(user: object, path: str) -> bool:
    """May ``user`` see plugins' views and, of the Data Docs site, the file at ``path``
    (:meth:`TableAccess.may_open`)? For the signed site, whose requests carry no session: the
    user is the one its link was signed for."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.models.resource_details import AccessView

    return get_auth_manager().is_authorized_view(
        access_view=AccessView.PLUGINS, user=user
    ) and TableAccess(DagAccess(user)).may_open(path)
