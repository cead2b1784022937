"""The soak's "no loss" check (:mod:`bench.ops.soak`, its step 3): the counts in, from the
generator's own report (what was sent, less what of it is malformed or a duplicate by the rules
the DLQs apply), against the outputs read back from each app's topics and DLQ, deduplicated by
ids. Each app's outputs are checked by their meaning (:data:`OUTPUT_CHECKS`), an app without an
entry by :func:`generic_checks`; :func:`account` puts the counts side by side.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from adlake import payload_rules, registry
from bench.ops.latency import ops_apps
from spark_apps.common.attribution.contract import (
    ATTRIBUTED_CALLBACK,
    ATTRIBUTED_IMPRESSION,
    ORPHAN_CALLBACK,
    ORPHAN_IMPRESSION,
    REQUEST_CLOSED,
)


def expected_counts(report: dict) -> dict[str, int]:
    """From a generator report: distinct valid events per input topic (sent, less the malformed
    and the duplicates) and the records each DLQ must hold.

    >>> r = {"sent": {"ad_requests": 10, "ad_impressions": 8, "ad_callbacks": 5, "page_clicks": 9},
    ...      "anomalies_by_topic": {t: {"invalid_json": 1, "duplicate": 1} for t in
    ...                             ("ad_requests", "ad_impressions", "ad_callbacks",
    ...                              "page_clicks")}}
    >>> expected_counts(r)["ad_requests"], expected_counts(r)["page_clicks_records"]
    (8, 8)
    >>> expected_counts(r)["ad_events_dlq"], expected_counts(r)["page_clicks_dlq"]
    (3, 1)
    """
    out: dict[str, int] = {}
    rejected = {
        t: sum(report["anomalies_by_topic"][t].get(k, 0) for k in payload_rules.REASON_KINDS)
        for t in report["sent"]
    }
    for topic, sent in report["sent"].items():
        out[topic] = sent - rejected[topic] - report["anomalies_by_topic"][topic]["duplicate"]
        out[f"{topic}_records"] = sent - rejected[topic]  # valid records, duplicates included
    for app in ops_apps():
        if app.dlq:
            out[app.dlq] = sum(rejected[t] for t in app.inputs)
    return out


@dataclass(frozen=True)
class Tally:
    """What the checks compare: the expected counts (:func:`expected_counts`), the records read
    from each output topic, the rows each app's watermark dropped (its status's, by app) and the
    closing request's id."""

    expected: dict[str, int]
    outputs: dict[str, list[dict]]
    late_rows: dict[str, int]
    closing_id: str | None


# An app's check of its outputs: (expected, got) by what it counts.
Check = Callable[[registry.App, Tally], dict[str, tuple[int, int]]]


def generic_checks(app: registry.App, tally: Tally) -> dict[str, tuple[int, int]]:
    """The check of an app without one of its own: each of its output topics holds records (its
    measured knobs make every input an output, and every app gets traffic)."""
    return {f"{t} has records": (1, min(1, len(tally.outputs[t]))) for t in app.outputs}


def attribution_checks(app: registry.App, tally: Tally) -> dict[str, tuple[int, int]]:
    """Attribution's checks: every distinct valid request closed once, every impression and
    callback emitted once, attributed or orphaned (the closing request not counted)."""
    expected = tally.expected
    by_type: dict[str, set] = {}
    for v in tally.outputs[app.outputs[0]]:
        item = {
            REQUEST_CLOSED: v["request_id"],
            ATTRIBUTED_IMPRESSION: v["impression_id"],
            ORPHAN_IMPRESSION: v["impression_id"],
            ATTRIBUTED_CALLBACK: v["callback_id"],
            ORPHAN_CALLBACK: v["callback_id"],
        }[v["record_type"]]
        by_type.setdefault(v["record_type"], set()).add(item)
    closed = by_type.get(REQUEST_CLOSED, set()) - {tally.closing_id}
    return {
        "requests closed": (expected["ad_requests"], len(closed)),
        "impressions attributed or orphaned": (
            expected["ad_impressions"],
            len(by_type.get(ATTRIBUTED_IMPRESSION, set()) | by_type.get(ORPHAN_IMPRESSION, set())),
        ),
        "callbacks attributed or orphaned": (
            expected["ad_callbacks"],
            len(by_type.get(ATTRIBUTED_CALLBACK, set()) | by_type.get(ORPHAN_CALLBACK, set())),
        ),
    }


def click_surge_checks(app: registry.App, tally: Tally) -> dict[str, tuple[int, int]]:
    """Click-surge's check: the final counts of all windows add up to the valid clicks, less
    those the watermark dropped as late (its ``late_rows``)."""
    windows: dict[tuple, int] = {}
    for v in tally.outputs[app.outputs[0]]:
        key = (v["page_id"], v["window_start"])
        windows[key] = max(windows.get(key, 0), v["click_count"])
    return {
        "clicks counted in windows (+ late)": (
            tally.expected["page_clicks_records"],
            sum(windows.values()) + tally.late_rows.get(app.name, 0),
        )
    }


# The checks of an app's outputs by their meaning, by app: these read its output's records as
# the app defines them. An app without an entry gets generic_checks.
OUTPUT_CHECKS: dict[str, Check] = {
    "attribution": attribution_checks,
    "click_surge": click_surge_checks,
}


def account(
    report: dict,
    outputs: dict[str, list[dict]],
    late_rows: dict[str, int],
    closing_id: str | None,
) -> dict:
    """In against out (:mod:`bench.ops.soak`'s docstring, "No loss"): per check, ``expected``,
    ``got`` and ``lost`` (expected - got; negative: more than expected). ``late_rows``: each app's
    rows the watermark dropped (its status's), by app."""
    expected = expected_counts(report)
    tally = Tally(expected, outputs, late_rows, closing_id)
    got: dict[str, tuple[int, int]] = {}
    apps = ops_apps()
    for app in apps:
        got.update(OUTPUT_CHECKS.get(app.name, generic_checks)(app, tally))
    for app in (a for a in apps if a.dlq):
        topic = registry.topic(app.dlq)
        ids = {tuple(v[f] for f in topic.id_fields) for v in outputs[app.dlq]}
        got[f"{app.dlq} records"] = (expected[app.dlq], len(ids))
    return {name: {"expected": e, "got": g, "lost": e - g} for name, (e, g) in got.items()}
