"""The combined fault report reads the newest run of each kind and says when one failed."""

from __future__ import annotations

import json

from tests.faults import report

OPS = {
    "side": "ops",
    "scenario": "kills",
    "form": "long",
    "seed": 1,
    "passed": True,
    "faults": [
        {"kind": "kill -9", "target": "attribution"},
        {"kind": "broker bounce", "target": "broker", "down_s": 28.2},
    ],
    "runs": {"attribution": 2},
    "records_in": {"attribution": 10},
    "records_out": {"attributed_events": 9},
    "records_out_uninterrupted": {"attributed_events": 9},
    "lost": {"attributed_events": 0},
    "duplicated": {"attributed_events": 2},
    "time_to_recover_s": [{"attribution": 19.3}],
}
LAKE = {
    "side": "lake",
    "seed": 7,
    "records_sent": 5,
    "ok": True,
    "jobs": [
        {
            "job": "gold",
            "runs": 2,
            "kills_hit": 1,
            "records_in": 4,
            "records_out": 4,
            "lost": 0,
            "extra": 0,
            "duplicated": 0,
            "time_to_recover_s": 10.3,
            "faults": [
                {
                    "job": "gold",
                    "moment": "after a commit",
                    "hit": True,
                    "observed": "v1",
                    "after_s": 2.0,
                }
            ],
        }
    ],
}


def test_the_newest_run_of_each_kind_is_reported(tmp_path):
    (tmp_path / "ops-kills-1.json").write_text(json.dumps({**OPS, "passed": False}))
    (tmp_path / "ops-kills-2.json").write_text(json.dumps(OPS))
    (tmp_path / "lake-1.json").write_text(json.dumps(LAKE))
    text = report.markdown(report.newest(tmp_path))
    assert "ops-kills-2.json" in text and "ops-kills-1.json" not in text
    assert "| gold | 2 | 1 | 4 | 4 | 0 | 0 | 0 | 10.3 s |" in text
    assert "kill -9 attribution; broker bounce (28 s down)" in text
    assert "| attributed_events 2 | 19-19 s | yes |" in text


def test_a_failed_run_fails_the_report(tmp_path, capsys):
    (tmp_path / "ops-kills-1.json").write_text(json.dumps({**OPS, "passed": False}))
    assert report.main(["--dir", str(tmp_path)]) == 1
    assert "| **no** |" in (tmp_path / "REPORT.md").read_text()
    (tmp_path / "ops-kills-2.json").write_text(json.dumps(OPS))
    assert report.main(["--dir", str(tmp_path)]) == 0
