// The "Streaming apps" page: /adlake/apps/api/status as one card per app, actions as DAG runs.
"use strict";

const REFRESH_MS = 5000;
const FINAL_RUN_STATES = new Set(["success", "failed"]);
const runs = {};  // app -> {dag_id, dag_run_id, action, state, error}: the last action's run
let latest = null;

const HOUR_S = 3600;
const open = {};  // app -> whether its details are open: kept across the page's refreshes

function field(label, value, title = null) {
  return [el("dt", {title}, label), el("dd", {title}, value)];
}

function fmtMs(ms) {
  if (ms === null || ms === undefined) return DASH;
  if (ms >= 10000) return `${fmt(ms / 1000, 0)} s`;
  if (ms >= 1000) return `${fmt(ms / 1000, 1)} s`;
  return `${fmt(ms, 0)} ms`;
}

// The last hour on the x axis: ticks every 15 minutes, "now" at the right.
function hourAxis(now) {
  return {
    xMin: now - HOUR_S, xMax: now, xTicks: [-60, -45, -30, -15, 0].map(m => now + m * 60),
    xFormat: x => Math.round(x) === Math.round(now) ? "now" : `-${Math.round((now - x) / 60)} min`,
  };
}

// One vital of the card: a name, a big value, what it is measured against, and a level (ok,
// warn, bad, none) that colours it. `title`: the longer explanation, on hover.
function vital(key, name, value, sub, level, title) {
  return el("div", {class: "vital", "data-vital": key, "data-level": level, title},
    el("div", {class: "vital-name"}, name),
    el("div", {class: "vital-value"}, value),
    el("div", {class: "vital-sub"}, sub));
}

// End-to-end latency: measured from the output topic (not the per-batch bound), p99 against
// the target of the app's mode: ok within it, warn within twice it, bad beyond.
function latencyVital(app) {
  const e2e = (app.status || {}).e2e_latency;
  const target = app.latency_target_ms;
  const title = "Measured end to end: an output record's Kafka timestamp minus the source " +
    "record's, over the newest output of the last minute (the listener's probe, every 15 s). " +
    `Target for this mode: p99 within ${fmtMs(target)}. Records a timer emits (a window's ` +
    "close, its orphans) come the window plus the lateness after their key's newest input: " +
    "their p99 is shown apart and not held to the target.";
  // timer-driven records (closes, orphans) measured apart: late by design
  const closes = e2e && e2e.timer_samples ? ` · closes p99 ${fmtMs(e2e.timer_p99_ms)}` : "";
  if (!e2e || e2e.p99_ms === null || e2e.p99_ms === undefined) {
    return vital("latency", "latency p99", DASH,
      (e2e && e2e.error ? `probe failed: ${e2e.error}` : "no output in the last minute") +
      ` · target ${fmtMs(target)}${closes}`, "none", title);
  }
  const level = e2e.p99_ms <= target ? "ok" : e2e.p99_ms <= 2 * target ? "warn" : "bad";
  return vital("latency", "latency p99", fmtMs(e2e.p99_ms),
    `p50 ${fmtMs(e2e.p50_ms)} · target ${fmtMs(target)}${closes}`, level, title);
}

// Keeping up: input and processed rows per second of the last batch (Real-Time Mode: of the
// last checkpoint interval). Processing well below the input is falling behind.
function throughputVital(s) {
  const input = s.input_rows_per_s, processed = s.processed_rows_per_s;
  const title = "Spark's inputRowsPerSecond and processedRowsPerSecond at the last progress " +
    "report: processing well below the input is falling behind.";
  if (input === undefined || input === null) {
    return vital("throughput", "rows/s in", DASH, "no batch yet", "none", title);
  }
  const level = input > 0 && processed < 0.9 * input ? "warn" : "ok";
  return vital("throughput", "rows/s in", fmt(input, input < 10 ? 1 : 0),
    `${fmt(processed, processed < 10 ? 1 : 0)} processed · ` +
    (level === "warn" ? "falling behind" : "keeping up"), level, title);
}

// Kafka input lag: offsets the app has not read yet (the largest partition's), from the
// source's progress metrics; growing over the last three reports is falling behind.
function lagVital(s) {
  const lag = s.input_lag;
  const title = "maxOffsetsBehindLatest of the Kafka source at the last progress report: " +
    "records already in Kafka the app had not read. avg: per partition.";
  if (!lag) return vital("lag", "Kafka lag", DASH, "no progress report yet", "none", title);
  const recent = (s.progress_history || []).slice(-3).map(p => p[3]);
  const growing = recent.length === 3 && recent[0] < recent[1] && recent[1] < recent[2];
  const rate = s.processed_rows_per_s;
  const seconds = rate > 0 ? lag.max_offsets / rate : null;
  const level = !lag.max_offsets ? "ok" : growing ? "bad" : seconds !== null && seconds > 30
    ? "warn" : "ok";
  const sub = [`avg ${fmt(lag.avg_offsets, 1)} per partition`,
               growing ? "growing" : null,
               seconds !== null && lag.max_offsets ? `≈ ${fmtDuration(seconds)} of input` : null]
    .filter(Boolean).join(" · ");
  return vital("lag", "Kafka lag", `${fmt(lag.max_offsets)}`, sub, level, title);
}

// An idle app (Spark found no new input since its last batch and said so) is not stale however
// old its last batch: staleness is the age of its last report, batch or idle heartbeat.
function progressVital(app) {
  const age = app.progress_age_s;
  const title = "The last batch's progress report (Real-Time Mode: once per checkpoint " +
    "interval). A micro-batch app with no new input runs no batch and reports idle instead.";
  if (app.idle) {
    return vital("progress", "last batch", age === null || age === undefined ? "none yet"
      : `${fmtDuration(age)} ago`,
      `idle: no new input · reported ${fmtDuration(app.report_age_s)} ago`, "ok", title);
  }
  // staleness is the age of the last report: in Real-Time Mode a boundary or, between them, the
  // app's word that its query is alive, so a last batch up to an interval old is normal
  const reported = app.report_age_s ?? age;
  const level = age === null || age === undefined ? "none"
    : reported > app.stale_after_s ? "bad" : "ok";
  const sub = app.rtm_interval_s
    ? `ago · a batch every ${fmtDuration(app.rtm_interval_s)} · alive ${fmtDuration(reported)} ago`
    : `ago · stale after ${fmtDuration(app.stale_after_s)}`;
  return vital("progress", "last batch", age === null || age === undefined ? DASH
    : fmtDuration(age), sub, level, title);
}

function restartsVital(restarts) {
  const count = (restarts && restarts.count) || 0;
  const level = !count ? "ok" : restarts.next_allowed_at ? "warn" : "ok";
  return vital("restarts", "restarts", fmt(count),
    count ? `last ${fmtTime(restarts.last_restart_at)}` : "none",
    level, count ? `${restarts.reason || ""}` : "The supervisor has not restarted it.");
}

function latencyChart(app) {
  const history = (app.status || {}).latency_history || [];
  return lineChart([
    {points: history.map(p => [p[0], p[2]]), cls: "p99", label: "p99"},
    {points: history.map(p => [p[0], p[1]]), cls: "p50", label: "p50"},
  ], {
    width: 560, height: 150, legend: true, yLog: true, ...hourAxis(latest.now),
    hLines: [{y: app.latency_target_ms, cls: "target",
              label: `target ${fmtMs(app.latency_target_ms)}`}],
    label: `${app.app} end-to-end latency, last hour (log scale)`,
    empty: "no end-to-end latency measured in the last hour", yFormat: fmtMs,
  });
}

function ratesChart(app) {
  const history = (app.status || {}).progress_history || [];
  return lineChart([
    {points: history.map(p => [p[0], p[1]]), cls: "input", label: "in"},
    {points: history.map(p => [p[0], p[2]]), cls: "processed", label: "processed"},
  ], {
    width: 275, height: 130, legend: true, ...hourAxis(latest.now),
    xTicks: [-60, -30, 0].map(m => latest.now + m * 60),
    label: `${app.app} rows per second, last hour`, empty: "no progress in the last hour",
    yFormat: y => fmt(y, y < 10 ? 1 : 0),
  });
}

function lagChart(app) {
  const history = (app.status || {}).progress_history || [];
  return lineChart([{points: history.map(p => [p[0], p[3]]), cls: "lag", label: "max behind"}], {
    width: 275, height: 130, legend: true, ...hourAxis(latest.now),
    xTicks: [-60, -30, 0].map(m => latest.now + m * 60),
    label: `${app.app} Kafka lag, last hour`, empty: "no lag reported in the last hour",
    yFormat: y => fmt(y), integer: true,
  });
}

function e2eText(status) {
  const e2e = status.e2e_latency;
  if (!e2e) return DASH;
  return `p50 ${fmtMs(e2e.p50_ms)} · p99 ${fmtMs(e2e.p99_ms)}` +
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
  return w.why ? el("span", {}, text, el("div", {class: "muted small"}, w.why)) : text;
}

function dlqText(app, status) {
  const value = status.dlq_rows_last_interval ?? status.dlq_rows;
  if (value === undefined || value === null) return DASH;
  return `${fmt(value)} (${app.dlq_topic})`;
}

function ago(seconds) {
  return seconds === null || seconds === undefined ? DASH : `${fmtDuration(seconds)} ago`;
}

// Everything else the lifecycle and the listener know, with what each figure means: behind a
// toggle, so the card answers "healthy? how late? keeping up?" first.
function details(app) {
  const s = app.status || {};
  const desired = app.desired;
  const restarts = app.restarts || {};
  const node = el("details", {class: "details"},
    el("summary", {}, "details: desired state, state, watermark, DLQ, per-batch bound, log"),
    el("dl", {class: "fields"},
      field("desired", `${desired.state} (${desired.trigger})`,
            `since ${fmtTime(desired.updated_at)}: ${desired.reason}`),
      field("why", app.why),
      field("last report", ago(app.report_age_s),
            `stale after ${fmtDuration(app.stale_after_s)}`),
      field("last batch", s.last_batch_at ? `${fmt(s.batch_id)} at ${fmtTime(s.last_batch_at)}`
            : DASH, s.batch_duration_ms !== undefined ? `${fmt(s.batch_duration_ms)} ms` : null),
      field("end-to-end latency", e2eText(s),
            s.e2e_latency ? `measured ${fmtTime(s.e2e_latency.measured_at)} ` +
                            "by the output-topic probe" : null),
      field("per-batch bound", s.latency_p50_ms === undefined ? DASH :
            `p50 ${fmtMs(s.latency_p50_ms)} · p99 ${fmtMs(s.latency_p99_ms)}`,
            "Not end-to-end latency: commit time minus source time per batch, an upper bound. " +
            "In Real-Time Mode a batch is the whole checkpoint interval, so it is about that " +
            "interval whatever the real latency; read latency p99 above."),
      field("state rows", `${fmt(s.state_rows)} (${fmt(s.state_memory_mb, 1, " MB")})`),
      // Spark reports the epoch as the watermark until the first event time is seen.
      field("watermark", s.watermark && s.watermark.startsWith("1970-01-01") ?
            "none yet (no event seen)" : fmtTime(s.watermark)),
      field("late rows", fmt(s.late_rows), "rows dropped behind the watermark, since start"),
      field("DLQ in last interval", dlqText(app, s)),
      field("restarts", restarts.count ? `${restarts.count} · last ` +
            `${fmtTime(restarts.last_restart_at)}: ${restarts.reason || DASH}` : "0",
            restarts.next_allowed_at ? `next allowed ${fmtTime(restarts.next_allowed_at)}` : null),
      field("waiting in state", waitingText(s)),
      field("log", app.log)));
  if (open[app.app]) node.open = true;
  node.addEventListener("toggle", () => { open[app.app] = node.open; });
  return node;
}

// The one error on-call needs first: the query's, else the supervisor's last restart's.
function lastError(app) {
  const s = app.status || {};
  const restarts = app.restarts || {};
  const text = s.error ? `query error: ${s.error}`
    : restarts.last_error ? `last restart error: ${restarts.last_error}` : null;
  return text ? el("pre", {class: "err", title: text}, text) : null;
}

function card(app) {
  const s = app.status || {};
  const holder = app.holder;
  // A holder not seen here (another PID namespace or host) has no pid to show or act on.
  const pid = holder && holder.pid !== null ? String(holder.pid) : "";
  const mode = (holder && holder.mode) || s.mode || app.desired.trigger;
  return el("section", {class: "card", id: `app-${app.app}`, "data-state": app.state,
                        "data-pid": pid,
                        "data-progress-age": app.progress_age_s == null ? "" :
                                             String(Math.round(app.progress_age_s))},
    el("header", {},
      el("h2", {}, app.app),
      el("span", {class: `badge state ${app.state}`, title: app.why}, app.state),
      el("span", {class: "chip"}, mode === "realtime" ? "Real-Time Mode" : "micro-batch"),
      el("span", {class: "muted small"},
         holder ? `pid ${pid || "elsewhere"} · up ${fmtDuration(app.uptime_s)}` : app.why),
    ),
    el("div", {class: "vitals"},
      latencyVital(app), throughputVital(s), lagVital(s), progressVital(app),
      restartsVital(app.restarts)),
    lastError(app),
    el("div", {class: "charts"},
      el("figure", {class: "wide"},
         el("figcaption", {}, "end-to-end latency, last hour (log scale)"), latencyChart(app)),
      el("figure", {}, el("figcaption", {}, "rows per second"), ratesChart(app)),
      el("figure", {}, el("figcaption", {}, "Kafka lag (offsets behind)"), lagChart(app))),
    details(app),
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
    runLine(app.app),
    el("span", {class: "spacer"}),
    airflowLink(`dags/${encodeURIComponent(app.actions.dag_id)}/runs`,
                `${app.actions.dag_id} runs`));
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

// The lake engine the lake's jobs run on (adlake.local.engine_report.engine_view), as its
// keeper last reported it: one line above the apps, a warning when it is not running.
const ENGINE_LEVEL = {running: "running", down: "failed", "not reporting": "stale",
                      stopped: "stopped"};

function engineLine(e) {
  if (!e) return [];
  const parts = [];
  if (e.state === "running") {
    parts.push(`pid ${e.pid} · up ${fmtDuration(e.uptime_s)}`,
               `memory ${fmt(e.rss_mb, 0, " MB")}`,
               e.work_error ? `operations: ${e.work_error}` :
                 `${fmt(e.operations)} operations running in ${fmt((e.sessions || []).length)}` +
                 " sessions");
    if (e.current_code === false) parts.push("runs older code: `make up` restarts it");
  } else if (e.state === "not reporting") {
    parts.push(`its keeper has not reported for ${fmtDuration(e.report_age_s)}`);
  } else if (e.state === "down") {
    parts.push("its JVM is down; the keeper starts it again");
  } else {
    parts.push("lake tasks fail until `make up` starts it");
  }
  const restarts = e.restarts || {};
  if (restarts.count) {
    parts.push(`restarted ${restarts.count}× · last ${fmtTime(restarts.last_at)}: ` +
               `${restarts.last_reason}`);
  }
  return [el("section", {class: "engine", id: "lake-engine", "data-state": e.state,
                         title: "The Spark Connect server the lake's jobs run on as sessions " +
                                "(docs/runbook.md: the lake engine is down)"},
    el("strong", {}, "lake engine"), " ",
    el("span", {class: `badge ${ENGINE_LEVEL[e.state] || ""}`}, e.state), " ",
    el("span", {class: "muted small"}, parts.join(" · ")))];
}

function render() {
  if (!latest) return;
  document.getElementById("engine").replaceChildren(...engineLine(latest.lake_engine));
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
