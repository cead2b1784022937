"""One report of what the fault tiers survived: ``make faults``' last step.

Both long forms write their results as JSON under ``<runtime>/reports/faults/``: the lake's
driver (``tests.faults.run``) one ``lake-<time>.json`` per run, the ops fault tests one
``ops-<scenario>-<time>.json`` per faulted run. This reads the newest file of each kind (the
lake run; each ops scenario and form) and writes ``REPORT.md`` beside them: per job or app, the
faults injected, the process runs, records in and out, lost, duplicated after id dedup, and the
time to recover, every figure as the run measured it.

    .venv/lake/bin/python -m tests.faults.report [--dir DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tests.faults import run


def newest(directory: Path) -> list[dict]:
    """The newest result of each kind in ``directory``, oldest kind first."""
    latest: dict[tuple, tuple[str, dict]] = {}
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text())
        kind = (
            ("lake",)
            if data.get("side") == "lake"
            else ("ops", data.get("scenario"), data.get("form"))
        )
        latest[kind] = (path.name, {**data, "file": path.name})
    return [entry for _, entry in sorted(latest.values())]


def _recovery(times: list[dict]) -> str:
    values = [s for t in times for s in t.values()]
    return f"{min(values):.0f}-{max(values):.0f} s" if values else "-"


def ops_section(runs: list[dict]) -> list[str]:
    lines = [
        "## Streaming apps",
        "",
        "| run | form | faults | process runs | records in | records out "
        "(uninterrupted) | lost | duplicated (ids) | time to recover | passed |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for data in runs:
        kinds: dict[str, int] = {}
        for fault in data["faults"]:
            label = (
                fault["kind"]
                if fault["target"] == "broker"
                else (f"{fault['kind']} {fault['target']}")
            )
            if fault.get("down_s") is not None:
                label += f" ({fault['down_s']:.0f} s down)"
            kinds[label] = kinds.get(label, 0) + 1
        faults = "; ".join(f"{n} x {k}" if n > 1 else k for k, n in kinds.items())
        out = ", ".join(
            f"{t} {n:,} ({data['records_out_uninterrupted'][t]:,})"
            for t, n in data["records_out"].items()
        )
        dup = ", ".join(f"{t} {n}" for t, n in data["duplicated"].items() if n is not None)
        lines.append(
            f"| `{data['file']}` | {data['form']} | {faults} | "
            + ", ".join(f"{a} {n}" for a, n in data["runs"].items())
            + " | "
            + ", ".join(f"{a} {n:,}" for a, n in data["records_in"].items())
            + f" | {out} | {sum(data['lost'].values())} | {dup} | "
            f"{_recovery(data['time_to_recover_s'])} | {'yes' if data['passed'] else '**no**'} |"
        )
    return lines + [
        "",
        "`page_surges` is compared by the highest count per window (update mode "
        "re-emits a window as it grows, so its duplicates are not counted).",
        "",
    ]


def markdown(results: list[dict]) -> str:
    lines = ["# Fault injection: what was survived", ""]
    lake = [r for r in results if r.get("side") == "lake"]
    ops = [r for r in results if r.get("side") == "ops"]
    for data in lake:  # the lake driver's own report, one heading level down
        lines += [
            "#" + line if line.startswith("#") else line for line in run.markdown(data).splitlines()
        ]
        lines += ["", f"(`{data['file']}`)", ""]
    if ops:
        lines += ops_section(ops)
    if not results:
        lines.append("No fault run found: run `make faults`.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from adlake.config import load_settings

    parser = argparse.ArgumentParser(
        prog="tests.faults.report",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    default = load_settings().reports_dir / "faults"
    parser.add_argument("--dir", type=Path, default=default, help="where the runs' JSON is")
    parser.add_argument("--out", type=Path, default=None, help="default: DIR/REPORT.md")
    args = parser.parse_args(argv)
    results = newest(args.dir) if args.dir.is_dir() else []
    out = args.out or args.dir / "REPORT.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(markdown(results))
    print(f"[faults] report of {len(results)} runs: {out}", flush=True)
    return 0 if results and all(r.get("ok", r.get("passed")) for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
