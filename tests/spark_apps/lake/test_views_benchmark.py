"""The views benchmark (a command, not a test of speed): one tiny run end to end, so the command
the README gives keeps working and reports what it claims. No timing is asserted."""

from __future__ import annotations

import pytest

from spark_apps.lake import views_benchmark

pytest.importorskip("delta")


@pytest.mark.integration
def test_a_tiny_run_reports_both_refreshes_and_what_bounds_their_ratio(spark, settings, tmp_path):
    lake = settings.with_overrides(runtime_dir=tmp_path / "runtime")
    args = views_benchmark.parse_args(["--rows", "4000", "--days", "4", "--campaigns", "3"])

    result = views_benchmark.run(spark, lake, args, 4000)

    # 1% of 4,000 rows in the last 2 of 4 days: 20 inserts, about 12 updates and 8 deletes.
    assert result["changes"]["inserted"] == 20
    assert result["changes"]["updated"] > 0 and result["changes"]["deleted"] > 0
    assert result["differences"] == 0  # the incremental view equals a recomputation
    assert result["groups"] == 3 * 4
    incremental = result["incremental"]
    assert incremental["groups_touched"] == 3 * 2  # every campaign, on the 2 changed days
    # 2 of 4 days, about half the rows; the warm-up and the change add to the same days.
    assert 0.45 < result["reread_share"] < 0.6
    assert result["floor_s"] > 0 and "incremental" in result["floor"]
    assert result["ratio_full_over_incremental"] == round(result["full_s"]
                                                          / result["incremental_s"], 2)
    line = views_benchmark.summary([result]).splitlines()[1]
    assert line.split()[0] == "4,000"
