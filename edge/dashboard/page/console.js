// The waitroom console: reads the node's event stream (server-sent events,
// read with fetch so that the admin token can go in a header), draws the
// ring and its rooms, and sends the operator's actions to the admin API.
"use strict";

const tokenKey = "waitroom-admin-token";
let frame = null;

function token() { return sessionStorage.getItem(tokenKey) || ""; }
function authHeaders(extra) {
  const h = Object.assign({}, extra || {});
  if (token()) h["Authorization"] = "Bearer " + token();
  return h;
}
function esc(s) {
  return String(s).replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}
function el(id) { return document.getElementById(id); }
function notice(text, cls) { const n = el("notice"); n.textContent = text; n.className = cls || ""; }
function setConn(text, ok) { const c = el("conn"); c.textContent = text; c.className = ok ? "ok" : "bad"; }
function ms(v) { return (v >= 0 ? "+" : "") + Math.round(v) + " ms"; }
function clock(t) { return new Date(t).toISOString().substring(11, 19); }

// stream reads the event stream until it ends, then comes back.
async function stream() {
  for (;;) {
    try {
      const resp = await fetch("/dashboard/events", {headers: authHeaders(), cache: "no-store"});
      if (resp.status === 401) {
        setConn("token needed", false);
        notice("This node's admin API needs the token to show its state: enter it above.", "warn");
        await sleep(3000);
        continue;
      }
      if (!resp.ok) throw new Error("HTTP " + resp.status);
      setConn("live", true);
      const reader = resp.body.getReader();
      const dec = new TextDecoder();
      let buf = "";
      for (;;) {
        const {value, done} = await reader.read();
        if (done) break;
        buf += dec.decode(value, {stream: true});
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const ev = buf.substring(0, i);
          buf = buf.substring(i + 2);
          const data = ev.split("\n").filter(l => l.startsWith("data: ")).map(l => l.substring(6)).join("\n");
          if (data) { frame = JSON.parse(data); render(); }
        }
      }
      setConn("reconnecting…", false);
    } catch (e) {
      setConn("disconnected: " + e.message, false);
      await sleep(2000);
    }
  }
}
function sleep(t) { return new Promise(r => setTimeout(r, t)); }

function render() {
  const st = frame.state;
  el("node").textContent = "node " + st.node;
  el("ringtime").textContent = "ring time " + clock(st.ring_time);
  renderRing(st);
  renderDatacenters(st);
  renderRooms(st);
  renderHooks(st);
  for (const r of st.rooms) renderRoom(r, (frame.rooms || []).find(x => x.name === r.name) || {});
  for (const d of document.querySelectorAll("#details > .room")) {
    if (!st.rooms.some(r => "room-" + r.name === d.id)) d.remove();
  }
}

function renderRing(st) {
  const peers = {};
  for (const p of ((st.lag || {}).ring || {}).peers || []) peers[p.name] = p;
  const rows = st.members.map(m => {
    const p = peers[m.name];
    const self = m.name === st.node;
    const cls = m.state === "alive" ? "ok" : (m.state === "suspect" ? "warn" : "bad");
    const off = self ? "this node (" + ms(((st.lag || {}).ring || {}).clock_skew_ms || 0) + " from the median)" : (p && p.offset_known ? ms(p.clock_offset_ms) : "not measured");
    const delay = self ? "" : (p && p.samples > 0 ? Math.round(p.delay_ms) + " ms" : "no samples");
    const heard = self || !m.last_heard ? "" : Math.max(0, (new Date(st.time) - new Date(m.last_heard)) / 1000).toFixed(1) + " s ago";
    return `<tr data-node="${esc(m.name)}"><td>${esc(m.name)}</td><td class="${cls}">${esc(m.state)}</td><td>${esc(m.addr)}</td><td class="num">${esc(heard)}</td><td class="num">${esc(off)}</td><td class="num">${esc(delay)}</td></tr>`;
  });
  el("ring").tBodies[0].innerHTML = rows.join("");
  let note = st.members.length + " members seen by this node.";
  if (frame.last_heard) {
    const ago = (new Date(st.time) - new Date(frame.last_heard)) / 1000;
    note += " Last gossip from a peer " + Math.max(0, ago).toFixed(1) + " s ago.";
  }
  el("ringnote").textContent = note;
}

function renderDatacenters(st) {
  const dcs = st.datacenters || [];
  el("dcs").hidden = dcs.length === 0;
  el("dcs").querySelector("tbody").innerHTML = dcs.map(d =>
    `<tr><td>${esc(d.name)}${d.own ? " (this node's)" : ""}</td><td class="num">${d.nodes}</td>` +
    `<td>${esc((d.carriers || []).join(", "))}</td><td>${esc((d.members || []).join(", "))}</td></tr>`).join("");
}

function renderHooks(st) {
  const hooks = st.webhooks || [];
  el("hooks").hidden = hooks.length === 0;
  el("hooks").querySelector("tbody").innerHTML = hooks.map(h =>
    `<tr><td>${esc(h.name)}</td><td class="num">${h.delivered}</td><td class="num ${h.failed_attempts ? "warn" : ""}">${h.failed_attempts}</td>` +
    `<td class="num ${h.given_up ? "bad" : ""}">${h.given_up}</td><td class="num">${h.pending}</td><td>${esc(h.last_error ? clock(h.last_error_at) + " " + h.last_error : "")}</td></tr>`).join("");
}

function statusOf(r, x) {
  if (x.stopped) return "emergency stop";
  return r.status;
}

function renderRooms(st) {
  el("rooms").tBodies[0].innerHTML = st.rooms.map(r => {
    const x = (frame.rooms || []).find(y => y.name === r.name) || {};
    const s = statusOf(r, x);
    const cls = x.stopped ? "bad" : (r.status === "not_queueing" ? "ok" : "warn");
    const ev = x.event ? x.event.phase + " (" + (x.event.name || x.event.id) + ")" : "none";
    return `<tr data-room="${esc(r.name)}"><td><a href="#room-${esc(r.name)}">${esc(r.name)}</a></td><td class="${cls}" data-field="status">${esc(s)}</td>` +
      `<td class="num" data-field="active">${r.estimated_total_active_users} / ${r.total_active_users}</td>` +
      `<td class="num" data-field="new">${r.new_users_this_minute} / ${r.new_users_per_minute}</td>` +
      `<td class="num" data-field="queued">${r.estimated_queued_users}</td><td class="num">${r.max_estimated_time_minutes} min</td><td>${esc(ev)}</td></tr>`;
  }).join("");
}

const palette = ["#1565c0", "#c62828", "#2e7d32", "#6a1b9a", "#ef6c00", "#00838f", "#5d4037"];

// chart draws series of [time ms, value] points over the window as SVG.
function chart(title, series, t0, t1) {
  const W = 360, H = 140, L = 36, B = 16;
  let max = 1;
  for (const s of series) for (const p of s.points) max = Math.max(max, p[1]);
  const x = t => L + (W - L - 4) * (t - t0) / Math.max(1, t1 - t0);
  const y = v => (H - B) - (H - B - 6) * v / max;
  let svg = `<svg viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(title)}">`;
  svg += `<line x1="${L}" y1="${H - B}" x2="${W}" y2="${H - B}" stroke="#999"/><line x1="${L}" y1="0" x2="${L}" y2="${H - B}" stroke="#999"/>`;
  svg += `<text x="2" y="12" font-size="10">${esc(fmt(max))}</text><text x="2" y="${H - B}" font-size="10">0</text>`;
  svg += `<text x="${L}" y="${H - 3}" font-size="10">−${Math.round((t1 - t0) / 60000)} min</text><text x="${W - 30}" y="${H - 3}" font-size="10">now</text>`;
  series.forEach((s, i) => {
    if (!s.points.length) return;
    const color = s.color || palette[i % palette.length];
    const d = s.points.map((p, j) => (j ? "L" : "M") + x(p[0]).toFixed(1) + " " + y(p[1]).toFixed(1)).join(" ");
    svg += `<path d="${d}" fill="none" stroke="${color}" stroke-width="1.6"${s.dash ? ' stroke-dasharray="4 3"' : ""}/>`;
  });
  svg += "</svg>";
  const legend = series.map((s, i) => `<span><svg width="10" height="10"><rect width="10" height="10" fill="${s.color || palette[i % palette.length]}"/></svg> ${esc(s.name)}</span>`).join("");
  return `<div class="chart"><h3>${esc(title)}</h3>${svg}<div class="legend">${legend}</div></div>`;
}
function fmt(v) { return v >= 100 ? Math.round(v) : Math.round(v * 100) / 100; }

function renderRoom(r, x) {
  let box = el("room-" + r.name);
  if (!box) {
    box = document.createElement("div");
    box.className = "room";
    box.id = "room-" + r.name;
    box.innerHTML = `<h2></h2><div class="actions">
      <button class="danger" data-act="stop">Emergency stop</button>
      <button data-act="resume">Resume</button>
      <button data-act="queue_all"></button>
      <label>total_active_users <input type="number" min="0" data-in="total_active_users"></label>
      <label>new_users_per_minute <input type="number" min="0" data-in="new_users_per_minute"></label>
      <button data-act="limits">Change limits</button></div><div class="live"></div>`;
    box.querySelector("h2").textContent = "Room " + r.name;
    box.querySelector('[data-in="total_active_users"]').value = r.total_active_users;
    box.querySelector('[data-in="new_users_per_minute"]').value = r.new_users_per_minute;
    box.querySelector(".actions").addEventListener("click", ev => {
      const act = ev.target.getAttribute("data-act");
      if (act) action(r.name, act, box);
    });
    el("details").appendChild(box);
  }
  box.querySelector('[data-act="queue_all"]').textContent = x.queue_all ? "Stop queueing everyone (queue_all off)" : "Queue everyone (queue_all)";
  box.dataset.queueAll = x.queue_all ? "1" : "";

  const hist = frame.history || [];
  const t1 = new Date(frame.state.ring_time).getTime();
  const t0 = t1 - (frame.window_seconds || 2100) * 1000;
  // The samples of the window, and the figures of this frame as "now".
  const shares = {};
  for (const n of r.nodes) shares[n.node] = n.traffic_share;
  const current = {active: r.estimated_total_active_users, queued: r.estimated_queued_users, shares};
  const pts = f => hist.filter(h => h.rooms && h.rooms[r.name]).map(h => [new Date(h.t).getTime(), f(h.rooms[r.name])]).concat([[t1, f(current)]]);
  const nodes = new Set();
  for (const h of hist) for (const n of Object.keys(((h.rooms || {})[r.name] || {}).shares || {})) nodes.add(n);
  for (const n of r.nodes) nodes.add(n.node);
  const perMin = ((x.analytics || {}).per_minute || []);
  const minutePts = k => perMin.map(m => [new Date(m.minute).getTime() + 30000, (m.counters || {})[k] || 0]);
  let html = `<div class="charts">` +
    chart("Active users", [{name: "active", points: pts(s => s.active)}, {name: "limit", dash: true, color: "#999", points: [[t0, r.total_active_users], [t1, r.total_active_users]]}], t0, t1) +
    chart("Admissions and arrivals queued per minute", [{name: "admitted", points: minutePts("visitors_admitted")}, {name: "queued", points: minutePts("visitors_queued")}, {name: "limit", dash: true, color: "#999", points: [[t0, r.new_users_per_minute], [t1, r.new_users_per_minute]]}], t0, t1) +
    chart("Queued users", [{name: "queued", points: pts(s => s.queued)}], t0, t1) +
    chart("Each node's share of arrivals", [...nodes].sort().map(n => ({name: n, points: pts(s => (s.shares || {})[n] || 0)})), t0, t1) +
    `</div><div class="cols">`;
  html += `<div><h3>Waiting per arrival bucket</h3><table><thead><tr><th>Arrived in</th><th>Waiting</th><th>Eligible slots</th></tr></thead><tbody>` +
    (r.buckets.length ? r.buckets.map(b => `<tr><td>${clock(b.bucket)}</td><td class="num">${b.waiting}</td><td class="num">${b.eligible_slots}</td></tr>`).join("") : `<tr><td colspan="3">nobody waiting</td></tr>`) +
    `</tbody></table></div>`;
  const tot = (x.analytics || {}).totals || {};
  const tq = (x.analytics || {}).time_in_queue || {};
  html += `<div><h3>Bots and challenges (last ${Math.round((frame.window_seconds || 2100) / 60)} min)</h3><table><tbody>` +
    [["Challenges shown", "challenges_issued"], ["Solved", "challenges_solved"], ["Failed (bots)", "challenges_failed"], ["Came back unsolved (likely bots)", "challenges_unsolved"], ["Infinite-queue refreshes (bots)", "infinite_queue_refreshes"], ["Sessions revoked", "sessions_revoked"], ["Visitors queued", "visitors_queued"], ["Visitors admitted", "visitors_admitted"]]
      .map(([label, k]) => `<tr><td>${label}</td><td class="num" data-counter="${k}">${tot[k] || 0}</td></tr>`).join("") +
    `<tr><td>Time in queue p50 / p90</td><td class="num">${Math.round(tq.p50_seconds || 0)} s / ${Math.round(tq.p90_seconds || 0)} s</td></tr></tbody></table></div>`;
  html += `<div><h3>Current event</h3>` + (x.event ?
    `<table><tbody><tr><td>Event</td><td>${esc(x.event.name || x.event.id)}</td></tr><tr><td>Phase</td><td>${esc(x.event.phase)}</td></tr>` +
    `<tr><td>Pre-queue from</td><td>${esc(x.event.prequeue_start_time)}</td></tr><tr><td>Starts</td><td>${esc(x.event.event_start_time)}</td></tr><tr><td>Ends</td><td>${esc(x.event.event_end_time)}</td></tr></tbody></table>`
    : `<p>No event now.</p>`) + `</div>`;
  html += `<div><h3>Nodes this minute</h3><table><thead><tr><th>Node</th><th>Arrivals</th><th>Admitted</th><th>Share</th></tr></thead><tbody>` +
    r.nodes.map(n => `<tr><td>${esc(n.node)}</td><td class="num">${n.arrivals_this_minute}</td><td class="num">${n.admitted_this_minute}</td><td class="num">${Math.round(n.traffic_share * 100)}%</td></tr>`).join("") +
    `</tbody></table></div></div>`;
  box.querySelector(".live").innerHTML = html;
}

// action sends one change to the admin API; the node refuses it without
// the token (401), and the console says so.
async function action(room, act, box) {
  const base = "/rooms/" + encodeURIComponent(room);
  let method = "POST", url = base + "/" + act, body = {};
  if (act === "queue_all") {
    method = "PATCH"; url = base; body = {queue_all: !box.dataset.queueAll};
  } else if (act === "limits") {
    method = "PATCH"; url = base;
    body = {
      total_active_users: parseInt(box.querySelector('[data-in="total_active_users"]').value, 10),
      new_users_per_minute: parseInt(box.querySelector('[data-in="new_users_per_minute"]').value, 10),
    };
  }
  try {
    const resp = await fetch(url, {method, headers: authHeaders({"Content-Type": "application/json"}), body: JSON.stringify(body)});
    let msg = "";
    try { msg = (await resp.json()).error || ""; } catch (e) { /* no JSON body */ }
    if (resp.status === 401) {
      notice("Refused: " + act + " on " + room + " needs the admin token (enter it above).", "bad");
    } else if (!resp.ok) {
      notice("Refused (" + resp.status + "): " + msg, "bad");
    } else {
      notice("Done: " + act + " on " + room + ". Every node applies it within about two seconds.", "ok");
    }
  } catch (e) {
    notice("Failed: " + e.message, "bad");
  }
}

document.addEventListener("DOMContentLoaded", () => {
  el("token").value = token();
  el("tokenform").addEventListener("submit", ev => {
    ev.preventDefault();
    sessionStorage.setItem(tokenKey, el("token").value.trim());
    notice("Token set for this tab.", "ok");
  });
  el("forget").addEventListener("click", () => {
    sessionStorage.removeItem(tokenKey);
    el("token").value = "";
    notice("Token forgotten.", "");
  });
  stream();
});
