// streamdb dashboard: polls /api/state every second and draws everything
// itself (SVG), so it works offline with no library.
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";
const COLORS = { in: "#2f6fde", out: "#14a38b", lag: "#e39b1b", state: "#8a5cd6", wm: "#0f8fa8", dur: "#2f6fde", size: "#14a38b", bad: "#d6453d" };
const KIND_COLORS = { source: "#2f6fde", aggregate: "#8a5cd6", join: "#e3721b", rank: "#c2469b", union: "#5f7a8c", sink: "#14a38b" };

function esc(s) {
  return String(s == null ? "" : s).replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}
function fmtNum(v) {
  if (v == null || isNaN(v)) return "–";
  const a = Math.abs(v);
  if (a >= 1e9) return (v / 1e9).toFixed(a >= 1e10 ? 0 : 1) + "G";
  if (a >= 1e6) return (v / 1e6).toFixed(a >= 1e7 ? 0 : 1) + "M";
  if (a >= 1e4) return (v / 1e3).toFixed(a >= 1e5 ? 0 : 1) + "k";
  if (a >= 100 || Number.isInteger(v)) return String(Math.round(v));
  return v.toFixed(a >= 10 ? 1 : 2);
}
function fmtBytes(v) {
  if (v == null || isNaN(v)) return "–";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
  return (i === 0 ? String(Math.round(v)) : v.toFixed(v >= 100 ? 0 : 1)) + " " + u[i];
}
function fmtMs(v) {
  if (v == null || isNaN(v)) return "–";
  if (v >= 1000) return (v / 1000).toFixed(v >= 10000 ? 0 : 2) + " s";
  return (v >= 10 ? v.toFixed(0) : v.toFixed(1)) + " ms";
}
// fmtSecs formats a duration in seconds (event-time lag can be days).
function fmtSecs(v) {
  if (v == null || isNaN(v)) return "–";
  const a = Math.abs(v);
  if (a >= 86400) return (v / 86400).toFixed(a >= 864000 ? 0 : 1) + " d";
  if (a >= 3600) return (v / 3600).toFixed(a >= 36000 ? 0 : 1) + " h";
  if (a >= 60) return (v / 60).toFixed(a >= 600 ? 0 : 1) + " min";
  return (a >= 10 || Number.isInteger(v) ? v.toFixed(0) : v.toFixed(1)) + " s";
}
// fmtStamp shows an event time (UTC, as streamdb's timestamps are).
function fmtStamp(ms) {
  return new Date(ms).toISOString().replace("T", " ").slice(0, 19);
}
// wmValue is a watermark as a stat's value: time of day, the date below.
function wmValue(ms) {
  const s = fmtStamp(ms);
  return `${esc(s.slice(11))}<div class="sub">${esc(s.slice(0, 10))}</div>`;
}
function fmtTime(ms) {
  const d = new Date(ms);
  return d.toLocaleTimeString([], { hour12: false });
}
function fmtAgo(ms, now) {
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return s + " s ago";
  if (s < 3600) return Math.floor(s / 60) + " min ago";
  return Math.floor(s / 3600) + " h ago";
}

function el(tag, attrs, parent) {
  const e = document.createElementNS(SVGNS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}
function svgText(parent, x, y, s, attrs) {
  const t = el("text", Object.assign({ x, y, "font-size": 11, fill: "#6b7785" }, attrs || {}), parent);
  t.textContent = s;
  return t;
}

// niceMax rounds a plot's top up to 1, 2 or 5 times a power of ten.
function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

// timePlot draws series of [t, v] over the window [t0, t1] as lines with a
// filled first series.
function timePlot(series, t0, t1, fmt, cls) {
  const W = 360, H = 130, L = 46, R = 8, T = 8, B = 20;
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, class: cls || "plot-svg", role: "img" });
  let vmax = 0;
  for (const s of series) for (const p of s.points) vmax = Math.max(vmax, p[1]);
  const top = niceMax(fmt === fmtBytes ? Math.max(vmax, 1024) : vmax);
  const x = t => L + (W - L - R) * (t - t0) / Math.max(1, t1 - t0);
  const y = v => T + (H - T - B) * (1 - v / top);
  for (let i = 0; i <= 4; i++) {
    const v = top * i / 4, yy = y(v);
    el("line", { x1: L, x2: W - R, y1: yy, y2: yy, stroke: i === 0 ? "#cfd6df" : "#eef1f5" }, svg);
    if (i % 2 === 0) svgText(svg, L - 6, yy + 4, fmt(v), { "text-anchor": "end" });
  }
  const span = t1 - t0;
  for (const f of [0, 0.5, 1]) {
    const t = t0 + span * f;
    const secs = Math.round((t1 - t) / 1000);
    const ago = secs >= 120 ? Math.round(secs / 60) + " min" : secs + " s";
    svgText(svg, x(t), H - 5, f === 1 ? "now" : `−${ago}`, { "text-anchor": f === 0 ? "start" : f === 1 ? "end" : "middle" });
  }
  series.forEach((s, i) => {
    if (!s.points.length) return;
    const d = s.points.map((p, k) => (k ? "L" : "M") + x(p[0]).toFixed(1) + " " + y(p[1]).toFixed(1)).join(" ");
    if (i === 0) {
      const last = s.points[s.points.length - 1], first = s.points[0];
      el("path", { d: d + ` L${x(last[0]).toFixed(1)} ${y(0)} L${x(first[0]).toFixed(1)} ${y(0)} Z`, fill: s.color, "fill-opacity": 0.12, stroke: "none" }, svg);
    }
    el("path", { d, fill: "none", stroke: s.color, "stroke-width": 1.8, "stroke-linejoin": "round", class: "series" }, svg);
  });
  return svg;
}

// markLate draws a red tick at the bottom of a timePlot (same geometry)
// at each time late rows were dropped.
function markLate(svg, times, t0, t1) {
  const W = 360, H = 130, L = 46, R = 8, B = 20;
  const x = t => L + (W - L - R) * (t - t0) / Math.max(1, t1 - t0);
  for (const t of times) {
    el("line", { x1: x(t), x2: x(t), y1: H - B - 10, y2: H - B, stroke: COLORS.bad, "stroke-width": 2, class: "late-mark" }, svg);
  }
}

function legend(items) {
  return `<div class="legend">${items.map(([n, c]) => `<span><i style="background:${c}"></i>${esc(n)}</span>`).join("")}</div>`;
}

// graphSVG lays the operator graph out left to right: a node's column is
// one past its deepest input.
function graphSVG(ops) {
  const depth = {};
  const byId = {};
  ops.forEach(o => { byId[o.id] = o; });
  const d = o => {
    if (depth[o.id] != null) return depth[o.id];
    depth[o.id] = 0;
    let m = -1;
    for (const i of o.inputs || []) m = Math.max(m, d(byId[i]));
    return (depth[o.id] = m + 1);
  };
  ops.forEach(d);
  const cols = [];
  ops.forEach(o => { (cols[depth[o.id]] = cols[depth[o.id]] || []).push(o); });
  const NW = 138, NH = 58, GX = 34, GY = 14, P = 6;
  const rows = Math.max(...cols.map(c => c.length));
  const W = P * 2 + cols.length * NW + (cols.length - 1) * GX, H = P * 2 + rows * NH + (rows - 1) * GY;
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, class: "opgraph", style: `width:100%;max-width:${W}px;height:auto` });
  const defs = el("defs", {}, svg);
  const mk = el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, defs);
  el("path", { d: "M0 0 L10 5 L0 10 z", fill: "#9aa7b6" }, mk);
  const pos = {};
  cols.forEach((c, ci) => {
    const off = (H - P * 2 - (c.length * NH + (c.length - 1) * GY)) / 2;
    c.forEach((o, ri) => { pos[o.id] = { x: P + ci * (NW + GX), y: P + off + ri * (NH + GY) }; });
  });
  for (const o of ops) {
    (o.inputs || []).forEach((i, k) => {
      const a = pos[i], b = pos[o.id];
      const x1 = a.x + NW, y1 = a.y + NH / 2, x2 = b.x - 1, y2 = b.y + NH / 2;
      const mx = (x1 + x2) / 2;
      el("path", { d: `M${x1} ${y1} C${mx} ${y1} ${mx} ${y2} ${x2} ${y2}`, fill: "none", stroke: "#9aa7b6", "stroke-width": 1.4, "marker-end": "url(#arrow)" }, svg);
      const st = (o.stages || [])[k];
      if (st) {
        const t = svgText(svg, mx, (y1 + y2) / 2 - 4, st === "filter, project" ? "σ π" : st === "filter" ? "σ" : st === "project" ? "π" : st, { "text-anchor": "middle", "font-size": 11, fill: "#5f6d7c" });
        const title = el("title", {}, t);
        title.textContent = st;
      }
    });
  }
  for (const o of ops) {
    const p = pos[o.id], c = KIND_COLORS[o.kind] || "#5f7a8c";
    const g = el("g", { class: "op op-" + o.kind }, svg);
    el("rect", { x: p.x, y: p.y, width: NW, height: NH, rx: 8, fill: "#fff", stroke: c, "stroke-width": 1.5 }, g);
    el("rect", { x: p.x, y: p.y, width: 5, height: NH, rx: 2, fill: c }, g);
    svgText(g, p.x + 13, p.y + 17, o.kind, { "font-size": 12, "font-weight": 700, fill: c });
    if (o.parallelism > 1) {
      el("rect", { x: p.x + NW - 36, y: p.y + 6, width: 30, height: 16, rx: 8, fill: c, "fill-opacity": 0.13 }, g);
      svgText(g, p.x + NW - 21, p.y + 18, "×" + o.parallelism, { "text-anchor": "middle", "font-size": 11, "font-weight": 700, fill: c });
    }
    let detail = o.detail || "";
    const lines = [];
    while (detail.length > 0 && lines.length < 2) {
      let cut = detail.length <= 20 ? detail.length : detail.lastIndexOf(" ", 20);
      if (cut <= 0) cut = Math.min(20, detail.length);
      lines.push(detail.slice(0, cut));
      detail = detail.slice(cut).trimStart();
    }
    if (detail.length && lines.length) lines[lines.length - 1] = lines[lines.length - 1].replace(/.?$/, "…");
    lines.forEach((ln, i) => svgText(g, p.x + 13, p.y + 33 + i * 13, ln, { "font-size": 11, fill: "#3b4a5b" }));
    const title = el("title", {}, g);
    title.textContent = `${o.kind}: ${o.detail} (parallelism ${o.parallelism})`;
  }
  return svg;
}

function stat(k, v, title) {
  return `<div class="stat"${title ? ` title="${esc(title)}"` : ""}><div class="k">${esc(k)}</div><div class="v">${v}</div></div>`;
}

function renderJobs(st) {
  const box = document.getElementById("jobs");
  if (!st.jobs.length) {
    box.innerHTML = '<p class="empty">No jobs yet. Create one with <code>CREATE MATERIALIZED VIEW</code>.</p>';
    return;
  }
  // The window is the samples kept (up to ten minutes), at least a minute.
  let first = st.now;
  for (const k in st.samples) if (st.samples[k].length) first = Math.min(first, st.samples[k][0].t);
  const t1 = st.now, t0 = Math.min(t1 - 60e3, first);
  box.innerHTML = "";
  for (const j of st.jobs) {
    const samples = st.samples[j.name] || [];
    const last = samples[samples.length - 1] || {};
    const div = document.createElement("div");
    div.className = "job";
    div.dataset.job = j.name;
    const next = j.next_restart ? `restart at ${fmtTime(Date.parse(j.next_restart))}` : "";
    div.innerHTML = `
      <div class="job-head"><h3 class="job-name">${esc(j.name)}</h3><span class="badge ${esc(j.state)}">${esc(j.state)}</span>
        <span class="job-kind">${esc(j.kind)}${next ? " · " + esc(next) : ""}</span></div>
      ${j.sql ? `<div class="sql mono" title="${esc(j.sql)}">${esc(j.sql)}</div>` : ""}
      <div class="stats">
        ${stat("rows in", fmtNum(j.rows_in))}
        ${stat("rows out", fmtNum(j.rows_out))}
        ${stat("in / s", fmtNum(last.in_rate || 0))}
        ${stat("lag (rows)", fmtNum(j.lag))}
        ${stat("watermark", j.watermark ? wmValue(Date.parse(j.watermark)) : "none", j.watermark ? "event time the job has completed: " + fmtStamp(Date.parse(j.watermark)) : "no event time: its streams have no WATERMARK FOR")}
        ${stat("late rows", fmtNum(j.late_rows || 0), "rows its windows dropped as late (behind the watermark on arrival)")}
        ${stat("state", fmtBytes(j.state_bytes), j.evicted ? j.evicted + " groups evicted" : "")}
        ${stat("epoch", fmtNum(j.epoch))}
        ${stat("checkpoint", j.last_checkpoint ? "#" + j.last_checkpoint : "none")}
        ${stat("restarts", fmtNum(j.restarts), j.strategy)}
      </div>
      ${j.last_error ? `<div class="error">${esc(j.last_error)}</div>` : ""}
      <div class="job-body">
        <div><div class="plot-title">Operator graph</div><div class="graph"></div></div>
        <div class="plots">
          <div class="plot plot-throughput"><div class="plot-title">Throughput <span class="muted">rows/s</span></div></div>
          <div class="plot plot-lag"><div class="plot-title">Lag <span class="muted">rows behind its sources</span></div></div>
          <div class="plot plot-wm"><div class="plot-title">Event-time lag <span class="muted">wall clock − watermark, and late rows</span></div></div>
          <div class="plot plot-state"><div class="plot-title">State <span class="muted">in memory</span></div></div>
        </div>
      </div>`;
    if (j.graph && j.graph.length) div.querySelector(".graph").appendChild(graphSVG(j.graph));
    else div.querySelector(".graph").innerHTML = '<p class="muted">not running</p>';
    const pts = f => samples.map(s => [s.t, f(s)]);
    const tp = div.querySelector(".plot-throughput");
    tp.appendChild(timePlot([{ color: COLORS.in, points: pts(s => s.in_rate) }, { color: COLORS.out, points: pts(s => s.out_rate) }], t0, t1, fmtNum, "plot-svg throughput"));
    tp.insertAdjacentHTML("beforeend", legend([["in", COLORS.in], ["out (changes)", COLORS.out]]));
    const lp = div.querySelector(".plot-lag");
    lp.appendChild(timePlot([{ color: COLORS.lag, points: pts(s => s.lag) }], t0, t1, fmtNum, "plot-svg lag"));
    const wp = div.querySelector(".plot-wm");
    if (samples.some(s => s.wm_lag_s !== undefined)) {
      // Event-time lag in seconds; late rows dropped per sample period as
      // a second series (its own scale would hide either, so late rows are
      // marked below the line as red ticks).
      wp.appendChild(timePlot([{ color: COLORS.wm, points: samples.filter(s => s.wm_lag_s !== undefined).map(s => [s.t, s.wm_lag_s]) }],
        t0, t1, fmtSecs, "plot-svg wmlag"));
      const lateAt = [];
      for (let i = 1; i < samples.length; i++) if ((samples[i].late_rows || 0) > (samples[i - 1].late_rows || 0)) lateAt.push(samples[i].t);
      markLate(wp.querySelector("svg"), lateAt, t0, t1);
      wp.insertAdjacentHTML("beforeend", legend([["event-time lag", COLORS.wm], [`late rows (${fmtNum(j.late_rows || 0)} in all)`, COLORS.bad]]));
    } else {
      wp.insertAdjacentHTML("beforeend", '<p class="muted wm-none">no watermark: its streams have no <code>WATERMARK FOR</code></p>');
    }
    const sp = div.querySelector(".plot-state");
    sp.appendChild(timePlot([{ color: COLORS.state, points: pts(s => s.state_bytes) }], t0, t1, fmtBytes, "plot-svg state"));
    box.appendChild(div);
  }
}

// checkpointPlot: one bar per checkpoint (its duration), the bytes it wrote
// as a line with dots on a second axis, failed ones as red crosses.
function checkpointPlot(cps) {
  const W = 1200, H = 200, L = 56, R = 64, T = 12, B = 24;
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, class: "plot-svg checkpoints", role: "img" });
  const n = Math.max(cps.length, 1);
  const dmax = niceMax(Math.max(0, ...cps.map(c => c.duration_ms)));
  const smax = niceMax(Math.max(0, ...cps.map(c => c.size)));
  const bw = (W - L - R) / n;
  const x = i => L + bw * i + bw / 2;
  const yd = v => T + (H - T - B) * (1 - v / dmax);
  const ys = v => T + (H - T - B) * (1 - v / smax);
  for (let i = 0; i <= 4; i++) {
    const yy = yd(dmax * i / 4);
    el("line", { x1: L, x2: W - R, y1: yy, y2: yy, stroke: i === 0 ? "#cfd6df" : "#eef1f5" }, svg);
    svgText(svg, L - 6, yy + 4, fmtMs(dmax * i / 4), { "text-anchor": "end", fill: COLORS.dur });
    svgText(svg, W - R + 6, yy + 4, fmtBytes(smax * i / 4), { "text-anchor": "start", fill: COLORS.size });
  }
  if (!cps.length) {
    svgText(svg, W / 2, H / 2, "no checkpoints yet", { "text-anchor": "middle", "font-size": 14 });
    return svg;
  }
  cps.forEach((c, i) => {
    const failed = c.status !== "COMPLETED";
    const h = Math.max(1.5, yd(0) - yd(c.duration_ms));
    const r = el("rect", { x: x(i) - Math.min(14, bw * 0.35), y: yd(0) - h, width: Math.min(28, bw * 0.7), height: h, rx: 2,
      fill: failed ? COLORS.bad : COLORS.dur, "fill-opacity": failed ? 0.85 : 0.75, class: failed ? "cp-bar failed" : "cp-bar" }, svg);
    const t = el("title", {}, r);
    t.textContent = `#${c.id} ${c.trigger} ${c.status}: ${fmtMs(c.duration_ms)}, wrote ${fmtBytes(c.size)}${c.error ? " — " + c.error : ""}`;
    if (failed) {
      const cx = x(i), cy = yd(0) - h - 10;
      el("path", { d: `M${cx - 5} ${cy - 5} L${cx + 5} ${cy + 5} M${cx - 5} ${cy + 5} L${cx + 5} ${cy - 5}`, stroke: COLORS.bad, "stroke-width": 2.4, class: "cp-failed" }, svg);
    }
  });
  const ok = cps.map((c, i) => [i, c]).filter(([, c]) => c.status === "COMPLETED");
  if (ok.length) {
    el("path", { d: ok.map(([i, c], k) => (k ? "L" : "M") + x(i).toFixed(1) + " " + ys(c.size).toFixed(1)).join(" "), fill: "none", stroke: COLORS.size, "stroke-width": 1.8 }, svg);
    for (const [i, c] of ok) el("circle", { cx: x(i), cy: ys(c.size), r: 2.8, fill: COLORS.size }, svg);
  }
  const every = Math.ceil(cps.length / 12);
  cps.forEach((c, i) => { if (i % every === 0 || i === cps.length - 1) svgText(svg, x(i), H - 6, "#" + c.id, { "text-anchor": "middle" }); });
  return svg;
}

function renderCheckpoints(st) {
  const cps = st.checkpoints || [];
  const plot = document.getElementById("cp-plot");
  plot.innerHTML = "";
  plot.appendChild(checkpointPlot(cps));
  plot.insertAdjacentHTML("beforeend", legend([["duration", COLORS.dur], ["bytes written", COLORS.size], ["failed", COLORS.bad]]));
  const recent = cps.slice(-8).reverse();
  document.getElementById("cp-table").innerHTML = recent.length ? `<table><thead><tr><th>id</th><th>trigger</th><th>status</th><th>started</th>
    <th class="num">duration</th><th class="num">written</th><th class="num">state</th><th>jobs</th><th>error</th></tr></thead><tbody>
    ${recent.map(c => `<tr><td>#${c.id}</td><td>${esc(c.trigger)}</td><td class="st-${esc(c.status)}">${esc(c.status)}</td>
      <td>${fmtTime(c.started_at)}</td><td class="num">${fmtMs(c.duration_ms)}</td><td class="num">${fmtBytes(c.size)}</td>
      <td class="num">${fmtBytes(c.state_size)}</td><td>${esc((c.jobs || []).join(", "))}</td><td>${esc(c.error || "")}</td></tr>`).join("")}
    </tbody></table>` : "";
}

function renderSummary(st) {
  const running = st.jobs.filter(j => j.state === "RUNNING").length;
  const bad = st.jobs.filter(j => j.state === "FAILED" || j.state === "RESTARTING").length;
  let rate = 0, lag = 0, state = 0;
  for (const j of st.jobs) {
    const s = st.samples[j.name] || [];
    if (s.length) rate += s[s.length - 1].in_rate;
    lag += j.lag;
    state += j.state_bytes;
  }
  const cps = st.checkpoints || [];
  const lastCp = cps[cps.length - 1];
  const failedCp = cps.filter(c => c.status !== "COMPLETED").length;
  const card = (k, v, s) => `<div class="card"><div class="k">${k}</div><div class="v">${v}</div><div class="s">${s || "&nbsp;"}</div></div>`;
  document.getElementById("summary").innerHTML =
    card("jobs running", `${running} / ${st.jobs.length}`, bad ? `<span style="color:var(--bad)">${bad} failing</span>` : "all healthy") +
    card("rows in / s", fmtNum(rate), "all jobs") +
    card("lag", fmtNum(lag), "rows not yet read") +
    card("state", fmtBytes(state), "in memory") +
    card("last checkpoint", lastCp ? fmtMs(lastCp.duration_ms) : "–",
      lastCp ? `#${lastCp.id} ${esc(lastCp.status.toLowerCase())}, ${fmtAgo(lastCp.started_at, st.now)}${failedCp ? ` · ${failedCp} failed` : ""}` : "none yet") +
    card("connections", fmtNum(st.connections), `disk ${fmtBytes(st.storage.disk_bytes)}`);
}

function renderTables(st) {
  const sps = st.savepoints || [];
  document.getElementById("savepoints").innerHTML = sps.length ? `<table><thead><tr><th>name</th><th>views</th><th>checkpoint</th><th>created</th><th class="num">size</th></tr></thead><tbody>
    ${sps.slice().reverse().map(s => `<tr><td><b>${esc(s.name)}</b></td><td>${esc((s.views || []).join(", "))}</td><td>#${s.checkpoint_id}</td>
      <td>${esc(new Date(s.created_at).toLocaleString([], { hour12: false }))}</td><td class="num">${fmtBytes(s.size)}</td></tr>`).join("")}</tbody></table>`
    : '<p class="muted">No savepoints. <code>CREATE SAVEPOINT name</code> takes one.</p>';
  const rs = st.restarts || [];
  document.getElementById("restarts").innerHTML = rs.length ? `<table><thead><tr><th>when</th><th>job</th><th>cause</th><th>action</th></tr></thead><tbody>
    ${rs.slice(-12).reverse().map(r => `<tr><td>${fmtTime(Date.parse(r.at))}</td><td><b>${esc(r.job)}</b></td><td class="mono">${esc(r.cause)}</td><td>${esc(r.action)}</td></tr>`).join("")}</tbody></table>`
    : '<p class="muted">No job has failed since the server started.</p>';
  const q = Object.entries(st.queries || {}).sort((a, b) => (b[1].ok + b[1].failed) - (a[1].ok + a[1].failed));
  document.getElementById("queries").innerHTML = q.length ? `<table><thead><tr><th>type</th><th class="num">ok</th><th class="num">failed</th></tr></thead><tbody>
    ${q.map(([k, v]) => `<tr><td>${esc(k)}</td><td class="num">${fmtNum(v.ok)}</td><td class="num"${v.failed ? ' style="color:var(--bad)"' : ""}>${fmtNum(v.failed)}</td></tr>`).join("")}</tbody></table>`
    : '<p class="muted">No statements yet.</p>';
  const s = st.storage || {};
  document.getElementById("storage").innerHTML = `<table><tbody>
    <tr><td>disk usage</td><td class="num">${fmtBytes(s.disk_bytes)}</td></tr>
    <tr><td>L0 files / sublevels</td><td class="num">${fmtNum(s.l0_files)} / ${fmtNum(s.l0_sublevels)}</td></tr>
    <tr><td>memtables</td><td class="num">${fmtNum(s.memtables)}</td></tr>
    <tr><td>compactions</td><td class="num">${fmtNum(s.compactions)}</td></tr>
    <tr><td>compaction debt</td><td class="num">${fmtBytes(s.compaction_debt_bytes)}</td></tr></tbody></table>`;
}

let failures = 0;
async function refresh() {
  const live = document.getElementById("live"), text = document.getElementById("live-text");
  try {
    const r = await fetch("api/state", { cache: "no-store" });
    if (!r.ok) throw new Error("HTTP " + r.status);
    const st = await r.json();
    renderSummary(st);
    renderJobs(st);
    renderCheckpoints(st);
    renderTables(st);
    failures = 0;
    live.className = "live ok";
    text.textContent = "live · updated " + fmtTime(st.now);
  } catch (e) {
    failures++;
    live.className = "live down";
    text.textContent = "server unreachable (" + e.message + ")";
  } finally {
    setTimeout(refresh, 1000);
  }
}
refresh();
