"""The soak (``bench/ops/soak.py``, with ``soak_samples.py`` and ``soak_accounting.py``): its
sampling, verdict, accounting and plot on small hand-made data, and, in the long form only
(``FAULTS_FORM=long``, ``make faults``), a smoke run of the real thing: a broker, both apps and
half a minute of traffic.

The 30-minute soak itself is ``make soak`` and no test."""

from __future__ import annotations

import json
import os

import pytest

from bench.ops import soak, soak_accounting, soak_samples
from tests.support.help import assert_help_shows_defaults


def test_help_shows_every_flags_default(capsys, monkeypatch):
    assert_help_shows_defaults("bench.ops.soak", capsys, monkeypatch)


def test_dir_usage_counts_bytes_and_files(tmp_path):
    (tmp_path / "offsets").mkdir()
    (tmp_path / "offsets" / "0").write_bytes(b"x" * 10)
    (tmp_path / "commits").mkdir()
    (tmp_path / "commits" / "0").write_bytes(b"y" * 5)
    assert soak_samples.dir_usage(tmp_path) == (15, 2)
    assert soak_samples.dir_usage(tmp_path / "missing") == (0, 0)


def test_an_unknown_driver_has_no_heap():
    assert soak_samples.heap(None) == {
        "heap_used_mb": None,
        "heap_committed_mb": None,
        "rss_mb": None,
    }


def test_trend_tells_a_plateau_from_growth():
    warmup = 300
    # fills during the warm-up, then flat with noise: bounded
    plateau = [(60 * i, min(i, 5) * 1000.0 + (i % 3) * 20) for i in range(30)]
    assert soak_samples.trend(plateau, warmup)["flat"] is True
    # a leak: grows by 3% a minute
    leak = [(60 * i, 1000.0 * 1.03**i) for i in range(30)]
    verdict = soak_samples.trend(leak, warmup)
    assert verdict["flat"] is False and verdict["growth"] > soak_samples.FLAT_TOLERANCE
    # missing samples (a probe that did not answer) are left out, not read as zeros
    holes = [(t, None if t % 120 else v) for t, v in plateau]
    assert soak_samples.trend(holes, warmup)["samples"] == len(
        [1 for t, v in holes if t >= warmup and v is not None]
    )


def generator_report() -> dict:
    """A generator report of 3 requests (one duplicate, one malformed), 2 impressions, 2
    callbacks and 6 clicks (one duplicate, one malformed)."""
    anomalies = {
        t: {"invalid_json": 0, "missing_field": 0, "wrong_type": 0, "duplicate": 0}
        for t in ("ad_requests", "ad_impressions", "ad_callbacks", "page_clicks")
    }
    anomalies["ad_requests"].update(invalid_json=1, duplicate=1)
    anomalies["page_clicks"].update(wrong_type=1, duplicate=1)
    return {
        "sent": {"ad_requests": 4, "ad_impressions": 2, "ad_callbacks": 2, "page_clicks": 6},
        "anomalies_by_topic": anomalies,
    }


def event(record_type: str, request_id: str, impression_id=None, callback_id=None) -> dict:
    return {
        "record_type": record_type,
        "request_id": request_id,
        "impression_id": impression_id,
        "callback_id": callback_id,
    }


def dlq(topic: str, offset: int) -> dict:
    return {"source_topic": topic, "source_partition": 0, "source_offset": offset}


def outputs() -> dict[str, list[dict]]:
    """What the apps must write for :func:`generator_report`, with at-least-once repeats."""
    return {
        "attributed_events": [
            event("attributed_impression", "r1", "i1"),
            event("attributed_impression", "r1", "i1"),
            event("orphan_impression", "r9", "i2"),
            event("attributed_callback", "r1", "i1", "c1"),
            event("orphan_callback", "r8", None, "c2"),
            event("request_closed", "r1"),
            event("request_closed", "r2"),
            event("request_closed", "close"),
        ],
        # 5 valid click records: windows of 3 (updates 1, 2, 3, and 3 again on a replay) and 2
        "page_surges": [
            {"page_id": "p1", "window_start": "t0", "click_count": n} for n in (1, 2, 3, 3)
        ]
        + [{"page_id": "p2", "window_start": "t0", "click_count": n} for n in (1, 2)],
        "ad_events_dlq": [dlq("ad_requests", 3), dlq("ad_requests", 3)],
        "page_clicks_dlq": [dlq("page_clicks", 5)],
    }


def test_accounting_deduplicates_and_balances():
    counts = soak_accounting.account(
        generator_report(), outputs(), late_rows={}, closing_id="close"
    )
    assert {name: (c["expected"], c["got"]) for name, c in counts.items()} == {
        "requests closed": (2, 2),
        "impressions attributed or orphaned": (2, 2),
        "callbacks attributed or orphaned": (2, 2),
        # 6 click records less 1 malformed: 5 valid, the duplicate included (each is a click)
        "clicks counted in windows (+ late)": (5, 5),
        "ad_events_dlq records": (1, 1),
        "page_clicks_dlq records": (1, 1),
    }
    assert all(c["lost"] == 0 for c in counts.values())
    # a click dropped by the watermark is accounted for by the status's late rows
    fewer = outputs()
    fewer["page_surges"] = fewer["page_surges"][:-1]
    assert (
        soak_accounting.account(
            generator_report(), fewer, late_rows={"click_surge": 1}, closing_id="close"
        )["clicks counted in windows (+ late)"]["lost"]
        == 0
    )


def test_accounting_reports_what_is_missing():
    missing = outputs()
    missing["attributed_events"] = [
        e for e in missing["attributed_events"] if e["record_type"] != "orphan_callback"
    ]
    missing["page_surges"] = missing["page_surges"][:-1]  # p2's last update: one click lost
    missing["page_clicks_dlq"] = []
    counts = soak_accounting.account(generator_report(), missing, late_rows={}, closing_id="close")
    assert {name: c["lost"] for name, c in counts.items() if c["lost"]} == {
        "callbacks attributed or orphaned": 1,
        "clicks counted in windows (+ late)": 1,
        "page_clicks_dlq records": 1,
    }
    # the closing request is left out: counted, it would be one close too many
    assert (
        soak_accounting.account(generator_report(), outputs(), {}, closing_id=None)[
            "requests closed"
        ]["lost"]
        == -1
    )


def test_the_plot_has_a_panel_per_metric(tmp_path):
    samples = [
        {
            "t_s": 60.0 * i,
            **{a.name: {m: float(i) for m, _ in soak_samples.METRICS} for a in soak.ops_apps()},
        }
        for i in range(5)
    ]
    path = soak_samples.plot(samples, 120, tmp_path / "soak.png", "test")
    assert path.read_bytes().startswith(b"\x89PNG")


if os.environ.get("FAULTS_FORM") == "long":  # not collected by make test, not skipped there

    @pytest.mark.integration  # a broker and both apps' JVMs
    @pytest.mark.faults
    def test_a_short_soak_loses_nothing_and_samples_every_metric(tmp_path):
        out = tmp_path / "soak.json"
        code = soak.main(
            [
                "--duration-min",
                "0.5",
                "--rate",
                "200",
                "--sample-s",
                "10",
                "--warmup-min",
                "0",
                "--rtm-interval",
                "10 seconds",
                "--out",
                str(out),
            ]
        )
        report = json.loads(out.read_text())
        assert code == 0 and report["no_loss"], report["counts"]
        assert len(report["samples"]) >= 2
        last = report["samples"][-1]
        for app in soak.ops_apps():
            for metric in ("state_rows", "checkpoint_files", "heap_used_mb"):
                assert last[app.name][metric] is not None, (app.name, metric, last)
        assert out.with_suffix(".png").read_bytes().startswith(b"\x89PNG")
