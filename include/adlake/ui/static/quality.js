// The "Data quality" page: /adlake/quality/api/summary as a table, one pass-rate chart per row.
"use strict";

function passRateChart(history) {
  // the pass rate of the runs so far, at each run of the window (oldest first), and a dot per run
  let passed = 0;
  const points = history.map((run, i) => {
    passed += run.passed ? 1 : 0;
    return [i, passed / (i + 1)];
  });
  const dots = history.map((run, i) => ({
    x: i, y: run.passed ? 1 : 0, cls: run.passed ? "passed" : "failed",
    href: "../data-docs/" + run.page,
    title: `${fmtTime(run.run_time)} ${run.run_name}: ${run.passed ? "passed" : "failed"} ` +
           `(${run.failed_errors} error, ${run.failed_warns} warn failed)`,
  }));
  return lineChart([{points, cls: "rate", label: "pass rate so far"}], {
    width: 260, height: 70, yMin: 0, yMax: 1, dots, empty: "no run yet",
    yFormat: y => `${Math.round(y * 100)}%`, xFormat: x => `#${x + 1}`,
    label: "pass rate over the last runs",
  });
}

// The newest data time a table holds and how far behind now, red past its grain's bound
// (adlake.freshness); a table never built is red too.
function freshCell(f) {
  if (!f) return el("td", {}, DASH);
  const title = `newest ${f.grain === "hour" ? "row time" : "day"} it holds; red when more ` +
    `than ${fmtDuration(f.bound_s)} behind (a table of ${f.grain} grain)` +
    (f.recorded_at ? `; recorded ${fmtTime(f.recorded_at)}, version ${f.version}` : "");
  const text = f.newest ? `${fmtDuration(f.behind_s)} behind`
    : f.recorded_at ? "empty" : "never built";
  return el("td", {title, "data-fresh": f.late ? "late" : "fresh"},
    el("span", {class: f.late ? "badge failed" : "badge passed"}, text),
    el("div", {class: "muted small"}, f.newest ? fmtTime(f.newest) : DASH));
}

function row(t) {
  const latest = t.latest;
  const badge = latest
    ? el("span", {class: "badge " + (latest.passed ? "passed" : "failed")},
         latest.passed ? "passed" : "failed")
    : el("span", {class: "badge"}, "no run yet");
  return el("tr", {},
    el("td", {}, el("b", {}, t.table)),
    el("td", {class: "muted"}, t.kind),
    el("td", {}, badge),
    el("td", {}, latest ? el("span", {},
      el("span", {class: latest.failed_errors ? "error" : ""}, String(latest.failed_errors)),
      " / ", String(latest.failed_warns), el("span", {class: "muted"},
      ` of ${latest.evaluated}`)) : DASH),
    el("td", {}, latest ? fmtTime(latest.run_time) : DASH),
    el("td", {}, !latest ? DASH : latest.run_id ? airflowLink(
      `dags/${encodeURIComponent(latest.dag_id)}/runs/${encodeURIComponent(latest.run_id)}`,
      latest.run_name) : latest.run_name),
    el("td", {}, latest ? el("a", {href: "../data-docs/" + latest.page}, "Data Docs") : DASH),
    freshCell(t.freshness),
    el("td", {}, t.pass_rate === null ? DASH
      : `${Math.round(t.pass_rate * 100)}% of ${t.runs}`),
    el("td", {}, passRateChart(t.history)),
  );
}

function fmtBytes(n) {
  if (n === null || n === undefined) return DASH;
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1000 && i < units.length - 1) { n /= 1000; i += 1; }
  return fmt(n, i ? 1 : 0, " " + units[i]);
}

function maintenance(run, allowed) {
  // the latest lake_maintenance run, one row per table (null before a first run, or for a user
  // who may not read lake_maintenance)
  const message = document.getElementById("maintenance-message");
  const table = document.getElementById("maintenance");
  if (!allowed) {
    message.textContent = "You may not see lake_maintenance, so not its runs.";
    table.hidden = true;
    return;
  }
  if (!run) {
    message.textContent = "No maintenance run yet (lake_maintenance runs daily at 03:30 UTC).";
    table.hidden = true;
    return;
  }
  message.replaceChildren(`Run ${fmtTime(run.finished_at)}, retention ${run.retention_hours} h: `,
    run.dag_id === "manual" ? run.run_id : airflowLink(
      `dags/${encodeURIComponent(run.dag_id)}/runs/${encodeURIComponent(run.run_id)}`,
      run.run_id));
  table.querySelector("tbody").replaceChildren(...run.tables.map(t => el("tr", {},
    el("td", {}, el("b", {}, t.table)),
    el("td", {}, fmt(t.files_compacted)),
    el("td", {}, fmt(t.files_removed)),
    el("td", {}, fmtBytes(t.bytes_removed)),
    el("td", {}, fmt(t.live_files_after)),
    el("td", {}, fmtBytes(t.live_bytes_after)),
    el("td", {}, fmtBytes(t.disk_bytes_after)),
    el("td", {}, fmt(t.seconds, 1)),
  )));
  table.hidden = false;
}

async function load() {
  const message = document.getElementById("message");
  try {
    const last = new URLSearchParams(location.search).get("last");
    const data = await api("api/summary" + (last ? `?last=${encodeURIComponent(last)}` : ""));
    document.getElementById("last").textContent = data.last;
    const docs = document.getElementById("docs");
    if (docs && !data.data_docs) {
      docs.replaceWith(el("span", {class: "muted"}, "No Data Docs yet: no quality check has run."));
    } else if (docs && !data.all_data_docs) {
      // the index lists every table's runs: for a user who may read every gate's DAG
      docs.replaceWith(el("span", {class: "muted"},
        "Data Docs: open a table's report below (the index lists tables you may not see)."));
    }
    const body = document.querySelector("#tables tbody");
    body.replaceChildren(...data.tables.map(row));
    document.getElementById("tables").hidden = false;
    maintenance(data.maintenance, data.maintenance_allowed);
    message.textContent = `Updated ${fmtTime(Date.now() / 1000)}.`;
  } catch (error) {
    message.replaceChildren(el("span", {class: "error"}, `Could not load: ${error.message}`));
  }
}

load();
setInterval(load, 60000);
