"""The table maintenance benchmark's file and its report share one type: what
``bench.lake.maintenance`` builds and writes (``asdict`` of a ``Maintenance``) reads back as the
same value, its goals as the report's, and a file without the fields the report does not show
(its summary) still reads."""

from __future__ import annotations

import json
from dataclasses import asdict

from bench.lake import maintenance, maintenance_report as report
from bench.report_kit import Goal, Node


def state(files: list[int], live: int, on_disk: int, read_s: float) -> report.MaintenanceState:
    return report.MaintenanceState(
        report.GoldFiles(
            partitions=len(files), mean=round(sum(files) / len(files), 2), max=max(files)
        ),
        report.Disk(live_bytes=live, disk_bytes=on_disk, disk_files=3 * sum(files), ratio=None),
        gold_read_s=read_s,
        view_refresh_s=2.5,
        load_average=1.25,
    )


def written() -> report.Maintenance:
    """A file as the benchmark fills it; its goals from its own function."""
    first = state([4], 150_804, 150_804, 0.576)
    after = state([1, 1, 1], 6_061_451, 6_100_000, 0.458)
    return report.Maintenance(
        hours=200,
        rows_per_day=100_000,
        clicks_per_day=13_581,
        tables=list(maintenance.TABLES),
        first=first,
        without=state([8, 44, 3], 8_123_800, 10_141_213, 0.24),
        after=after,
        maintenance_s=33.7,
        maintenance=[report.TableMaintenance("page_traffic", "compacted 76 files", 9.92)],
        goals=maintenance.goals(first, after),
        clustering=report.Clustering(
            key="page_id",
            page="pg195",
            files_per_day=8,
            max_file_bytes=5444,
            one_file_a_day=report.PointRead(9, 9, 0.354),
            spread=report.PointRead(68, 68, 0.295),
            zordered=report.Zordered(164, 9, 0.248, optimize_s=8.4),
        ),
        cores=2,
        seconds=1272.9,
    )


def test_what_the_benchmark_writes_the_report_reads_back_equal():
    result = written()
    value = json.loads(json.dumps(asdict(result)))
    read, goals = report.read_maintenance(Node("maintenance.json", "", value))
    assert read == result
    assert goals == [Goal.of("maintenance", g) for g in result.goals]
    assert [g.met for g in goals] == [True, False, True]  # no ratio: the bytes' goal not met
    assert value["goals"][0] == {
        "goal": "files per gold day-partition after maintenance",
        "target": "<= 4",
        "measured": "max 1, mean 1.0",
        "met": True,
        "bound": "OPTIMIZE bin-packs a day's files into one",
    }


def test_the_fields_the_report_does_not_show_are_optional():
    value = json.loads(json.dumps(asdict(written())))
    for key in ("rows_per_day", "tables", "maintenance", "cores", "seconds", "clustering"):
        del value[key]
    del value["after"]["disk"]["disk_files"], value["after"]["gold_files"]["partitions"]
    read, _ = report.read_maintenance(Node("maintenance.json", "", value))
    assert read.tables is None and read.clustering is None and read.after.disk.disk_files is None
    assert read.after.gold_files == report.GoldFiles(mean=1.0, max=1)
