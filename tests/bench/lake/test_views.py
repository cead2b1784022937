"""The views benchmark (a command, not a test of speed): one tiny run end to end, so the command
the README gives keeps working and reports what it claims. No timing is asserted."""

from __future__ import annotations

import pytest

from bench.lake import views as views_benchmark, views_report, views_suite

pytest.importorskip("delta")


# The views tooling also runs end to end in make bench-quick (tests/bench/ops/test_report.py,
# in make test); this fuller tiny run is in make test-e2e.
@pytest.mark.integration
@pytest.mark.e2e
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
    assert result["ratio_full_over_incremental"] == round(
        result["full_s"] / result["incremental_s"], 2
    )
    line = views_benchmark.summary([result]).splitlines()[1]
    assert line.split()[0] == "4,000"


def _case(name: str, rows: int, inc: float, full: float | None, **extra) -> views_report.Case:
    kind = views_report.OneRow if name == "one_row" else views_report.ViewCase
    return kind(
        case=name,
        rows=rows,
        incremental_s=inc,
        full_s=full,
        ratio=None if full is None else round(full / inc, 2),
        verify_differences=None,
        change_rows=100_000,
        phases={"bookkeeping": 0.1, "change": 0.3, "merge": 0.7},
        jobs={"bookkeeping": 0, "change": 1, "merge": 6},
        total_jobs=7,
        commits=2,
        load_average=(0.5, 1.0),
        **extra,
    )


def test_the_goals_compare_each_case_with_its_target_and_name_what_bounds_it():
    cases = [
        _case("one_row", 10_000_000, 1.2, None, all_s=[1.1, 1.2, 1.4]),
        _case("append", 10_000_000, 2.0, 12.0),
        _case("delete_update", 10_000_000, 9.0, 13.0),
        _case("append", 100_000_000, 3.5, 110.0),
    ]

    one_row, append, fixed = views_suite.goals(cases)

    assert one_row.met and "1.20 s (median of 3)" in one_row.measured
    assert "7 Spark jobs, 2 Delta commits" in one_row.measured
    assert one_row.bound == "largest phase: merge 0.70 s (6 jobs)"
    assert append.met and append.measured.startswith("6.0x")  # 12 / 2 >= 5
    # 3.5 / 2.0 = 1.75x growth from 10M to 100M: over the 1.5x target.
    assert not fixed.met and fixed.measured.startswith("incremental 1.75x")
    assert "full 9.2x" in fixed.measured


def test_one_size_has_no_growth_goal():
    cases = [_case("one_row", 1000, 2.0, None, all_s=[2.0]), _case("append", 1000, 4.0, 8.0)]

    goals = views_suite.goals(cases)

    assert [g.met for g in goals] == [False, False]  # 2.0 s > 1.5 s; 2x < 5x
