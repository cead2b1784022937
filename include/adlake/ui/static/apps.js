// The "Streaming apps" page: /adlake/apps/api/status as one card per app, actions as DAG runs.
"use strict";

const REFRESH_MS = 5000;
const FINAL_RUN_STATES = new Set(["success", "failed"]);
const runs = {};  // app -> {dag_id, dag_run_id, action, state, error}: the last action's run
let latest = null;

function field(label, value, title = null) {
  return [el("dt", {title}, label), el("dd", {title}, value)];
}

function latencyChart(app) {
  const history = (app.status || {}).latency_history || [];
  const now = latest.now;
  const p50 = history.map(p => [p[0], p[1]]);  // null: a measure without samples, a gap
  const p99 = history.map(p => [p[0], p[2]]);
  return lineChart([{points: p50, cls: "p50", label: "p50"},
                    {points: p99, cls: "p99", label: "p99"}], {
    width: 490, height: 130, xMin: now - 3600, xMax: now, legend: true,
    label: `${app.app} end-to-end latency, last hour`,
    empty: "no end-to-end latency history yet",
    yFormat: y => y >= 10000 ? `${Math.round(y / 1000)} s` : `${Math.round(y)} ms`,
    xFormat: x => x === now ? "now" : `-${Math.round((now - x) / 60)} min`,
  });
}

function e2eText(status) {
  const e2e = status.e2e_latency;
  if (!e2e) return DASH;
  return `p50 ${fmt(e2e.p50_ms, 0, " ms")} · p99 ${fmt(e2e.p99_ms, 0, " ms")}` +
    (e2e.samples !== undefined ? ` (${fmt(e2e.samples)} samples` +
     (e2e.window_s !== undefined ? ` over ${fmtDuration(e2e.window_s)}` : "") + ")" : "");
}

function waitingText(status) {
  const w = status.waiting_in_state;
  if (!w) return DASH;
  const parts = [`${fmt(w.rows)} rows`];
  if (w.oldest_event_time) parts.push(`oldest event ${fmtTime(w.oldest_event_time)}`);
  if (w.closes_at) parts.push(`closes at ${fmtTime(w.closes_at)}`);
  const text = el("span", {}, parts.join(" · "));
  return w.why ? el("span", {}, text, el("div", {class: "muted"}, w.why)) : text;
}

function dlqText(app, status) {
  const value = status.dlq_rows_last_interval ?? status.dlq_rows;
  if (value === undefined || value === null) return DASH;
  return `${fmt(value)} (${app.dlq_topic})`;
}

function ago(seconds) {
  return seconds === null || seconds === undefined ? DASH : `${fmtDuration(seconds)} ago`;
}

function restartsText(restarts) {
  if (!restarts || !restarts.count) return "0";
  return `${restarts.count} · last ${fmtTime(restarts.last_restart_at)}: ` +
    `${restarts.reason || DASH}`;
}

function card(app) {
  const s = app.status || {};
  const holder = app.holder;
  // A holder not seen here (another PID namespace or host) has no pid to show or act on.
  const pid = holder && holder.pid !== null ? String(holder.pid) : "";
  const desired = app.desired;
  const restarts = app.restarts || {};
  const fields = el("dl", {class: "fields"},
    field("desired", `${desired.state} (${desired.trigger})`,
          `since ${fmtTime(desired.updated_at)}: ${desired.reason}`),
    field("mode", (holder && holder.mode) || s.mode || DASH),
    field("pid", pid || (holder ? "elsewhere" : DASH), holder ? holder.elsewhere : null),
    field("uptime", fmtDuration(app.uptime_s),
          holder ? `started ${fmtTime(holder.started_at)}` : null),
    field("last progress", ago(app.progress_age_s),
          s.last_batch_at ? `batch ${fmt(s.batch_id)} at ${fmtTime(s.last_batch_at)}` : null),
    field("last report", ago(app.report_age_s),
          `stale after ${fmtDuration(app.stale_after_s)}`),
    field("input rows/s", fmt(s.input_rows_per_s, 1)),
    field("processed rows/s", fmt(s.processed_rows_per_s, 1)),
    field("end-to-end latency", e2eText(s),
          s.e2e_latency ? `measured ${fmtTime(s.e2e_latency.measured_at)} ` +
                          "by the output-topic probe" : null),
    field("per-batch bound (not end-to-end)",
          s.latency_p50_ms === undefined ? DASH :
          `p50 ${fmt(s.latency_p50_ms, 0, " ms")} · p99 ${fmt(s.latency_p99_ms, 0, " ms")}`,
          "commit time minus source time per batch: an upper bound; in Real-Time Mode a " +
          "batch is the whole checkpoint interval"),
    field("state rows", fmt(s.state_rows)),
    field("state memory", fmt(s.state_memory_mb, 1, " MB")),
    // Spark reports the epoch as the watermark until the first event time is seen.
    field("watermark", s.watermark && s.watermark.startsWith("1970-01-01") ?
          "none yet (no event seen)" : fmtTime(s.watermark)),
    field("late rows", fmt(s.late_rows)),
    field("DLQ in last interval", dlqText(app, s)),
    field("restarts", restartsText(restarts),
          restarts.next_allowed_at ? `next allowed ${fmtTime(restarts.next_allowed_at)}` : null),
    field("waiting in state", waitingText(s)),
    field("log", app.log),
  );
  const errors = [];
  if (s.error) errors.push(el("pre", {class: "err"}, `query error: ${s.error}`));
  if (restarts.last_error) {
    errors.push(el("pre", {class: "err"}, `last restart error: ${restarts.last_error}`));
  }
  return el("section", {class: "card", id: `app-${app.app}`, "data-state": app.state,
                        "data-pid": pid,
                        "data-progress-age": app.progress_age_s == null ? "" :
                                             String(Math.round(app.progress_age_s))},
    el("header", {},
      el("h2", {}, app.app),
      airflowLink(`dags/${encodeURIComponent(app.actions.dag_id)}/runs`, app.actions.dag_id),
      el("span", {class: `badge state ${app.state}`}, app.state),
      el("span", {class: "why"}, app.why)),
    fields,
    ...errors,
    el("div", {class: "muted"}, "end-to-end latency, last hour"),
    latencyChart(app),
    buttons(app),
  );
}

// The buttons as the status says (adlake.ui.apps.buttons): each a request to Airflow's REST API.
// A user who may not run the app's DAG (can_act false) gets them disabled, saying why: Airflow
// would refuse their requests anyway.
function buttons(app) {
  const run = runs[app.app];
  const busy = run && !FINAL_RUN_STATES.has(run.state) && !run.error;
  const denied = `you may not run ${app.actions.dag_id}: ask for a role that may trigger it`;
  return el("div", {class: "buttons"},
    app.actions.buttons.map(b => el("button", {
      "data-action": b.label, title: app.can_act ? b.title : denied,
      disabled: busy || !b.enabled || !app.can_act ? "" : null,
      onclick: () => trigger_(app.app, b)}, b.label)),
    app.can_act ? null : el("span", {class: "muted", "data-view-only": ""}, "view only"),
    runLine(app.app));
}

function runLine(name) {
  const run = runs[name];
  if (!run) return null;
  const link = run.dag_run_id ? airflowLink(
    `dags/${encodeURIComponent(run.dag_id)}/runs/${encodeURIComponent(run.dag_run_id)}`,
    run.dag_run_id) : null;
  return el("span", {class: "run", "data-run-state": run.error ? "error" : run.state},
    `${run.label}: `, link, " ",
    run.error ? el("span", {class: "error"}, run.error)
              : el("span", {class: `badge ${run.state}`}, run.state || "requested"));
}

// Trigger the app's DAG with the user's own session, then poll the run until it ends.
async function trigger_(name, b) {
  runs[name] = {dag_id: b.dag_id, label: b.label, state: "requested"};
  render();
  try {
    const run = await api(AIRFLOW_ROOT + b.path, {method: "POST",
      headers: {"Content-Type": "application/json"}, body: JSON.stringify(b.body)});
    runs[name] = {dag_id: b.dag_id, label: b.label, dag_run_id: run.dag_run_id, state: run.state};
    render();
    await poll(name);
  } catch (error) {
    runs[name] = {...runs[name], error: error.message};
    render();
  }
}

async function poll(name) {
  const run = runs[name];
  while (!FINAL_RUN_STATES.has(run.state)) {
    await new Promise(resolve => setTimeout(resolve, 2000));
    const now = await api(`${AIRFLOW_ROOT}api/v2/dags/${encodeURIComponent(run.dag_id)}` +
                          `/dagRuns/${encodeURIComponent(run.dag_run_id)}`);
    run.state = now.state;
    render();
  }
  await refresh();
}

function render() {
  if (!latest) return;
  document.getElementById("apps").replaceChildren(...latest.apps.map(card));
}

async function refresh() {
  const message = document.getElementById("message");
  try {
    latest = await api("api/status");
    render();
    message.textContent = `Updated ${fmtTime(latest.now)}.`;
  } catch (error) {
    message.replaceChildren(el("span", {class: "error"}, `Could not load: ${error.message}`));
  }
}

refresh();
setInterval(refresh, REFRESH_MS);
