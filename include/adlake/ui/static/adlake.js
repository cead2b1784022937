// Shared by Adlake's pages: formatting, JSON fetches with the Airflow session, and small SVG
// line charts drawn here (no chart library, no CDN).
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";

// The Airflow api-server's root, seen from a page under <root>adlake/…: Airflow's REST API and
// UI pages are relative to it (the api-server may live under a base path).
const AIRFLOW_ROOT = location.pathname.slice(0, location.pathname.indexOf("/adlake/") + 1);

const DASH = "—";

// A link to an Airflow UI page. Framed by the Airflow UI (same origin, but its sandbox allows no
// top-level navigation), the click moves the UI's own router instead; alone, a plain link.
function airflowLink(path, text) {
  const href = AIRFLOW_ROOT + path;
  return el("a", {href, onclick: event => {
    if (window.parent === window) return;
    try {
      window.parent.history.pushState({}, "", href);
      window.parent.dispatchEvent(new PopStateEvent("popstate"));
      event.preventDefault();
    } catch (e) { /* not reachable: follow the link inside the frame */ }
  }}, text);
}

function fmt(value, digits = 0, unit = "") {
  if (value === null || value === undefined || value === "") return DASH;
  if (typeof value === "number") {
    return value.toLocaleString(undefined, {maximumFractionDigits: digits}) + unit;
  }
  return String(value) + unit;
}

function fmtDuration(seconds) {
  if (seconds === null || seconds === undefined) return DASH;
  const s = Math.round(seconds);
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 172800) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

function fmtTime(value) {
  if (value === null || value === undefined || value === "") return DASH;
  const d = typeof value === "number" ? new Date(value * 1000) : new Date(value);
  return isNaN(d) ? String(value) : d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function svg(tag, attrs = {}, text = null) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== null) node.textContent = text;
  return node;
}

// fetch with the Airflow session: the UI's own login cookie (_token, httpOnly) goes along on
// same-origin requests; a refused session says so instead of failing silently.
async function api(url, options = {}) {
  const response = await fetch(url, {credentials: "same-origin", ...options,
    headers: {"Accept": "application/json", ...(options.headers || {})}});
  let body = null;
  try { body = await response.json(); } catch (e) { body = null; }
  if (!response.ok) {
    const detail = body && body.detail ? (typeof body.detail === "string" ? body.detail
      : JSON.stringify(body.detail)) : response.statusText;
    // 401: no session or an expired one; 403: a bad token, or a user without the permission
    const hint = response.status === 401 ? " (log in to Airflow again)"
      : response.status === 403 ? " (not allowed to your Airflow user, or log in again)" : "";
    throw new Error(`${response.status} ${detail}${hint}`);
  }
  return body;
}

// Nice round tick values covering [lo, hi]: about `count` of them, steps of 1, 2 or 5 × 10^n.
function niceTicks(lo, hi, count = 4) {
  const raw = (hi - lo) / count, mag = Math.pow(10, Math.floor(Math.log10(raw || 1)));
  const step = [1, 2, 5, 10].map(m => m * mag).find(s => s >= raw) || raw;
  const ticks = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push(t);
  return ticks;
}

// A line chart: series = [{points: [[x, y], ...], cls, label}], x and y numbers; a null y is a
// gap (a measure without samples), the line resumes after it.
// opts: width, height, yMin, yMax, xMin, xMax, xFormat(x), yFormat(y), xTicks: [x, ...],
// yLog (a log scale: startup spikes of seconds stay readable beside tens of milliseconds),
// hLines: [{y, cls, label}] (a target), dots: [{x, y, cls, title, href}], legend, integer
// (whole counts: integer ticks only).
// Gridlines at round values; the y axis is labelled at each.
function lineChart(series, opts = {}) {
  const W = opts.width || 480, H = opts.height || 120, L = 48, R = 8, T = opts.legend ? 16 : 8;
  const B = 18;
  const finite = p => p[1] !== null && p[1] !== undefined && (!opts.yLog || p[1] > 0);
  const all = series.flatMap(s => s.points).concat((opts.dots || []).map(d => [d.x, d.y]))
    .filter(finite);
  const root = svg("svg", {class: "chart", width: W, height: H, viewBox: `0 0 ${W} ${H}`,
                           role: "img", "aria-label": opts.label || "chart"});
  if (!all.length) {  // a short strip saying so, not an empty plot's height
    const h = 28;
    root.setAttribute("height", h);
    root.setAttribute("viewBox", `0 0 ${W} ${h}`);
    root.append(svg("text", {x: L, y: 18}, opts.empty || "no data yet"));
    return root;
  }
  const xs = all.map(p => p[0]);
  const ys = all.map(p => p[1]).concat((opts.hLines || []).map(h => h.y));
  let x0 = opts.xMin ?? Math.min(...xs), x1 = opts.xMax ?? Math.max(...xs);
  if (x1 === x0) { x0 -= 1; x1 += 1; }
  let fy = y => y, yTicks;
  let y0, y1;
  if (opts.yLog) {
    // whole decades around the data: 10 ms, 100 ms, 1 s …
    y0 = Math.pow(10, Math.floor(Math.log10(Math.min(...ys))));
    y1 = Math.pow(10, Math.ceil(Math.log10(Math.max(...ys)) + 1e-9));
    fy = y => Math.log10(y);
    yTicks = [];
    for (let t = y0; t <= y1 * 1.0001; t *= 10) yTicks.push(t);
  } else {
    y0 = opts.yMin ?? Math.min(0, ...ys);
    y1 = opts.yMax ?? Math.max(...ys);
    if (y1 === y0) y1 = y0 + 1;
    if (opts.integer) y1 = Math.max(y1, y0 + 2);  // whole counts: no tick between 0 and 1
    yTicks = niceTicks(y0, y1).filter(t => !opts.integer || Number.isInteger(t));
    if (opts.yMax === undefined) y1 = Math.max(y1, yTicks[yTicks.length - 1]);
  }
  const px = x => L + (x - x0) / (x1 - x0) * (W - L - R);
  const py = y => T + (1 - (fy(y) - fy(y0)) / (fy(y1) - fy(y0))) * (H - T - B);
  const yf = opts.yFormat || (y => fmt(y)), xf = opts.xFormat || (x => fmt(x));
  for (const t of yTicks) {
    root.append(svg("line", {class: t === y0 ? "axis" : "grid", x1: L, y1: py(t), x2: W - R,
                             y2: py(t)}));
    root.append(svg("text", {x: L - 4, y: py(t) + 3, "text-anchor": "end"}, yf(t)));
  }
  root.append(svg("line", {class: "axis", x1: L, y1: T, x2: L, y2: py(y0)}));
  for (const x of opts.xTicks || [x0, x1]) {
    const anchor = x === x0 ? "start" : x === x1 ? "end" : "middle";
    root.append(svg("text", {x: px(x), y: H - 4, "text-anchor": anchor}, xf(x)));
  }
  for (const h of opts.hLines || []) {
    root.append(svg("line", {class: h.cls, x1: L, y1: py(h.y), x2: W - R, y2: py(h.y)}));
    if (h.label) {
      root.append(svg("text", {x: W - R - 2, y: py(h.y) - 3, "text-anchor": "end",
                               class: h.cls + "-label"}, h.label));
    }
  }
  for (const s of series) {
    let d = "", pen = "M";
    for (const p of s.points) {
      if (!finite(p)) { pen = "M"; continue; }
      d += `${pen}${px(p[0]).toFixed(1)},${py(p[1]).toFixed(1)}`;
      pen = "L";
    }
    if (!d) continue;
    if (!d.includes("L")) {  // one point so far: a dot, not an invisible line
      const [x, y] = d.slice(1).split(",");
      root.append(svg("circle", {class: s.cls + " point", cx: x, cy: y, r: 2.5}));
      continue;
    }
    const path = svg("path", {class: s.cls, d});
    if (s.label) path.append(svg("title", {}, s.label));
    root.append(path);
  }
  for (const dot of opts.dots || []) {
    const c = svg("circle", {class: dot.cls, cx: px(dot.x), cy: py(dot.y), r: 3.5});
    if (dot.title) c.append(svg("title", {}, dot.title));
    if (dot.href) {
      const a = svg("a", {href: dot.href});
      a.append(c);
      root.append(a);
    } else {
      root.append(c);
    }
  }
  if (opts.legend) {
    // a swatch and a name per series, left to right above the plot
    let x = L;
    for (const s of series) {
      if (!s.label) continue;
      root.append(svg("line", {class: s.cls, x1: x, y1: 7, x2: x + 14, y2: 7}));
      root.append(svg("text", {x: x + 18, y: 10}, s.label));
      x += 30 + 6 * s.label.length;
    }
  }
  return root;
}
