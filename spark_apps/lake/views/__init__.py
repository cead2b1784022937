"""Incremental materialized views: group-by aggregates over a Delta source, kept up to date from
the source's Change Data Feed and a MERGE.

A view (``registry.View``) is a source table, grouping keys (optionally derived by a SQL
expression) and aggregates of six kinds: count, sum, min, max, avg and approx_distinct. It is
stored as a Delta table at ``settings.table_path(view.name)``::

    keys… | one column per aggregate | __count | hidden helpers…

``__count`` is the number of source rows of the group (a group whose count reaches 0 is deleted);
``sum`` and ``avg`` keep ``__sum_<name>``/``__cnt_<name>`` (the sum and the number of non-null
values, so a sum over nothing is NULL, as in SQL); ``approx_distinct`` keeps an HLL sketch
``__hll_<name>`` (unions of sketches are sketches, so partial results merge).

A refresh processes the source versions ``(v0, v1]``, where ``v0`` is the version the view
already reflects and ``v1`` the source's latest:

1. read the change feed: inserts and post-images count +1, deletes and pre-images −1;
2. aggregate the change per group: count, sums and non-null counts add signed deltas;
   min, max and sketches can only *grow* from a change: a group touched by any −1 row
   (a delete, or the pre-image of an update) is recomputed from the source at ``v1``, the others
   combine ``least``/``greatest``/``hll_union`` with their stored values;
3. MERGE the new state of every touched group into the view (update, insert, or delete the group
   when its count reaches 0);
4. record ``v1`` in the ``_view_progress`` table.

Worked example, ``count`` and ``max(price)`` per campaign. The view holds ``c1: count 2, max 5``
(rows 3 and 5). The source then changes: a row ``(c1, 7)`` is inserted and the row ``(c1, 5)`` is
deleted. The change aggregates to ``c1: Δcount = +1 −1 = 0``, with a −1 row, so ``max`` cannot be
derived (the deleted 5 was the maximum; the stored value does not say what the next one is) and
``c1`` is recomputed from the source at ``v1``: ``count 2, max 7``. Had the change been the insert
alone: ``count 2 + 1 = 3, max = greatest(5, 7) = 7``, no source read.

Exactly once, through a crash at any point:

* the MERGE runs with Delta's idempotent-write options ``txnAppId = "view:<name>"`` and
  ``txnVersion = v1``: Delta records the pair in the view's log (a ``SetTransaction``) in the
  same commit as the new view content, and skips any later write with the same app id and a
  version not above it. A second run that computed the same ``(v0, v1]`` (a retry, or a
  concurrent duplicate) cannot apply it twice;
* that pair is also the record of the version the view reflects: it is read from the view's
  latest snapshot (no job, no history read), before anything else. A full refresh records its
  version the same way. A crash between the MERGE and the progress write leaves ``v1`` in the
  view's log; the rerun starts from it, even if the source has moved on in the meantime, and the
  progress table catches up. Only a view table without the pair (written before full refreshes
  recorded it) falls back to the ``userMetadata`` of its commits, then to the progress table;
* a crash before the MERGE changes nothing: the rerun recomputes the same change.

One writer per view is assumed (one Airflow task per view, ``max_active_runs=1``).

Layout: a full refresh writes the view as ``VIEW_FILES`` ranges of its time key (the last key,
``registry.View.time_key``: a date or an hour), one file each. A refresh filters both the stored
state it reads and the MERGE's target on the touched groups' time-key values (a filter every
matched group passes, so it changes no result), and Delta skips the files whose statistics rule
them out: an hour's events scan and rewrite the files of their own dates, not the whole view.

    .venv/lake/bin/python -m spark_apps.lake.views --all
    .venv/lake/bin/python -m spark_apps.lake.views --view campaign_daily_totals --full-refresh
    .venv/lake/bin/python -m spark_apps.lake.views --all --verify

The package, along its seams:

* :mod:`~spark_apps.lake.views.layout`: the columns of a view's table and the helpers the
  transforms share;
* :mod:`~spark_apps.lake.views.transforms`: the pure DataFrame transforms (projection, full
  aggregation, change groups, new state, comparison);
* :mod:`~spark_apps.lake.views.bookkeeping`: reading Delta tables and their log (versions, change
  feed, the recorded ``txnVersion``), the progress table, the full refresh's overwrite and the
  idempotent MERGE;
* :mod:`~spark_apps.lake.views.recompute`: the view recomputed from its source,
  :func:`full_refresh` and :func:`verify`;
* :mod:`~spark_apps.lake.views.engine`: the incremental :func:`refresh`;
* :mod:`~spark_apps.lake.views.results`: what they return (:class:`RefreshReport`,
  :class:`Difference`) and raise;
* :mod:`~spark_apps.lake.views.cli`: the command (``python -m spark_apps.lake.views``).
"""

from spark_apps.lake.views.bookkeeping import (
    HISTORY_LOOKBACK,
    PROGRESS_TABLE,
    committed_version,
    latest_version,
    merge_into_view,
    read_changes,
    read_version,
    record_progress,
    recorded_version,
)
from spark_apps.lake.views.cli import main, parse_args, refresh_view
from spark_apps.lake.views.engine import FAIL_POINTS, KEY_FILTER_LIMIT, refresh
from spark_apps.lake.views.layout import (
    COUNT,
    HLL_LG_CONFIG_K,
    NON_DECOMPOSABLE,
    helper_columns,
    needs_recompute,
    view_columns,
)
from spark_apps.lake.views.recompute import VIEW_FILES, full_refresh, verify
from spark_apps.lake.views.results import (
    ChangeFeedUnavailable,
    Difference,
    InjectedFailure,
    RefreshReport,
    SourceRewound,
    ViewInconsistent,
    ViewNotMaterialized,
)
from spark_apps.lake.views.transforms import (
    SIGNS,
    transform_aggregate,
    transform_change_groups,
    transform_changes,
    transform_compare,
    transform_new_state,
    transform_project,
)

__all__ = [
    "COUNT",
    "FAIL_POINTS",
    "HISTORY_LOOKBACK",
    "HLL_LG_CONFIG_K",
    "KEY_FILTER_LIMIT",
    "NON_DECOMPOSABLE",
    "PROGRESS_TABLE",
    "SIGNS",
    "VIEW_FILES",
    "ChangeFeedUnavailable",
    "Difference",
    "InjectedFailure",
    "RefreshReport",
    "SourceRewound",
    "ViewInconsistent",
    "ViewNotMaterialized",
    "committed_version",
    "full_refresh",
    "helper_columns",
    "latest_version",
    "main",
    "merge_into_view",
    "needs_recompute",
    "parse_args",
    "read_changes",
    "read_version",
    "record_progress",
    "recorded_version",
    "refresh",
    "refresh_view",
    "transform_aggregate",
    "transform_change_groups",
    "transform_changes",
    "transform_compare",
    "transform_new_state",
    "transform_project",
    "verify",
    "view_columns",
]
