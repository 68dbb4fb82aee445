// The boat's page. Everything comes from the boat itself: /api/* over HTTP, live status over /ws.
// The CSRF token arrives with the session and goes back in X-CSRF-Token on every state change.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { csrf: null, ws: null, status: null, geometry: null, track: [], tab: "status",
                compass: null, loggedIn: false, retry: 500, tilesUrl: null, tiles: {} };
const TRACK_MAX = 3000;

function show(el, yes) { el.hidden = !yes; }
function text(el, t) { el.textContent = t; }
function fmt(v, digits, unit) { return v === null || v === undefined ? "-" : v.toFixed(digits) + (unit || ""); }

async function api(method, path, body) {
  const opts = { method, headers: {}, credentials: "same-origin" };
  if (method !== "GET") opts.headers["X-CSRF-Token"] = state.csrf || "";
  if (body instanceof FormData) opts.body = body;
  else if (body !== undefined) { opts.headers["Content-Type"] = "application/json"; opts.body = JSON.stringify(body); }
  const r = await fetch(path, opts);
  let data = {};
  try { data = await r.json(); } catch (e) { data = { ok: false, text: "refused: HTTP " + r.status }; }
  if (r.status === 401 && state.loggedIn) { state.loggedIn = false; start(); }
  return data;
}

function answer(el, a) {
  text(el, a.text || "");
  el.className = "answer " + (a.ok ? "ok" : "refused");
  if (a.reasons && a.reasons.length > 1) {
    el.textContent = a.text.split(":")[0] + ":";
    for (const r of a.reasons) { const d = document.createElement("div"); d.textContent = r; el.appendChild(d); }
  }
}

// ---------------------------------------------------------------- session
async function start() {
  const s = await api("GET", "/api/session");
  state.tilesUrl = s.tiles_url;
  state.public = !!s.public_status;
  state.loggedIn = !!s.logged_in;
  state.csrf = s.csrf;
  show($("login"), !s.logged_in);
  show($("tabs"), s.logged_in || s.public_status);
  show($("stop-buttons"), s.logged_in);
  show($("commands"), s.logged_in);
  show($("mission-form"), s.logged_in);
  show($("guided-label"), s.logged_in);
  if (s.logged_in || s.public_status) { selectTab(state.tab); connect(); }
  else { for (const t of document.querySelectorAll(".tab")) show(t, false); }
  if (!s.password_set) text($("login-answer"), "No web password is set on the boat: autopilot keys web --config BOAT.yaml");
}

$("login-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const a = await api("POST", "/api/login", { password: $("login-password").value });
  $("login-password").value = "";
  answer($("login-answer"), a);
  if (a.ok) { state.csrf = a.csrf; await start(); }
});
$("logout-button").addEventListener("click", async () => {
  await api("POST", "/api/logout");
  if (state.ws) state.ws.close();
  state.loggedIn = false; state.csrf = null;
  await start();
});

// ---------------------------------------------------------------- tabs
function selectTab(name) {
  state.tab = name;
  for (const b of document.querySelectorAll("nav button[data-tab]")) b.classList.toggle("on", b.dataset.tab === name);
  for (const t of document.querySelectorAll(".tab")) show(t, t.id === "tab-" + name);
  if (name === "params") loadParams();
  if (name === "logs") loadLogs();
  if (name === "map") drawMap();
  if (name === "compass") drawCompass();
  if (name === "sensors") loadSensors();
}
for (const b of document.querySelectorAll("nav button[data-tab]")) b.addEventListener("click", () => selectTab(b.dataset.tab));

// ---------------------------------------------------------------- live status
function connect() {
  if (state.ws && state.ws.readyState <= 1) return;
  const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws");
  state.ws = ws;
  ws.onopen = () => { text($("conn"), "live"); state.retry = 500; };
  ws.onclose = () => {
    text($("conn"), "offline");
    if (state.loggedIn || state.public) setTimeout(connect, state.retry);
    state.retry = Math.min(10000, state.retry * 2);
  };
  ws.onmessage = (ev) => {
    const m = JSON.parse(ev.data);
    if (m.type === "status") onStatus(m.data);
    else if (m.type === "geometry") { state.geometry = m.data; drawMap(); }
    else if (m.type === "compass") { state.compass = m.data; drawCompass(); }
  };
}
setInterval(() => {      // the operator heartbeat: the link failsafe knows this page is watching
  if (state.loggedIn && state.ws && state.ws.readyState === 1) state.ws.send(JSON.stringify({ type: "heartbeat" }));
}, 1000);

function list(el, items) {
  // rebuilt only when the items change, so a reader can select the text between two pushes
  const key = JSON.stringify(items);
  if (el.dataset.items === key) return;
  el.dataset.items = key;
  el.replaceChildren(...items.map((t) => { const li = document.createElement("li"); li.textContent = t; return li; }));
}

function onStatus(s) {
  state.status = s;
  text($("mode"), s.mode);
  text($("armed"), s.armed ? "ARMED" : "disarmed");
  $("armed").className = "value " + (s.armed ? "refused" : "");
  const n = s.nav;
  text($("position"), n.valid ? `${fmt(n.north_m, 1, " m N")}, ${fmt(n.east_m, 1, " m E")} (${fmt(n.lat_deg, 6)}, ${fmt(n.lon_deg, 6)})` : "no position estimate");
  text($("heading"), n.valid ? `heading ${fmt(n.heading_deg, 0, "°")}, ${fmt(n.speed_mps, 2, " m/s")}` : "");
  const g = s.gnss;
  text($("gnss"), g ? `fix ${g.fix_quality}, ${g.sats} satellites, HDOP ${fmt(g.hdop, 1)}, ${fmt(g.age_s, 1, " s")} old` : "no fix received");
  const h = s.health;
  text($("health"), h ? `${h.converged ? "converged" : "not converged"}, ±${fmt(h.pos_std_m, 1, " m")}, heading ±${fmt(h.heading_std_deg, 1, "°")}` : "-");
  text($("battery"), s.battery.v === null ? "not measured" : `${fmt(s.battery.v, 2, " V")} (low at ${fmt(s.battery.low_v, 1, " V")})`);
  text($("link"), s.link.heartbeat_age_s === null ? "no operator heartbeat yet" : `operator heartbeat ${fmt(s.link.heartbeat_age_s, 1, " s")} ago`);
  const m = s.mission;
  text($("mission"), `${m.name}: waypoint ${Math.min(m.index + 1, m.total)} of ${m.total}${m.complete ? " (complete)" : ""}${m.cleared ? " (cleared)" : ""}`);
  list($("failsafes"), s.failsafes.map((f) => `${f.kind}: ${f.action}`));
  list($("prearm"), s.armed ? [] : (s.prearm.length ? s.prearm : ["all pass: ready to arm"]));
  const banner = $("banner");
  show(banner, !s.thrusters.vouched);
  text(banner, s.thrusters.vouched ? "" : "THRUSTERS NOT VOUCHED FOR: " + s.thrusters.why);
  const esc = $("esc-thruster");
  if (esc.options.length !== s.thrusters.names.length) {
    esc.replaceChildren(...s.thrusters.names.map((name, i) => { const o = document.createElement("option"); o.value = String(i); o.textContent = name; return o; }));
  }
  text($("esc-pulses"), "pulses now: " + s.thrusters.names.map((n, i) => `${n} ${s.thrusters.pulses_us[i]} µs`).join(", "));
  const sel = $("mode-select");
  if (sel.options.length !== s.modes.length) {
    sel.replaceChildren(...s.modes.map((name) => { const o = document.createElement("option"); o.value = o.textContent = name; return o; }));
  }
  if (s.events.length) {
    const ol = $("events");
    for (const e of s.events) { const li = document.createElement("li"); li.textContent = `${fmt(s.t_s, 1, " s")}: ${e}`; ol.prepend(li); }
    while (ol.children.length > 50) ol.lastChild.remove();
  }
  if (n.valid) {
    const last = state.track[state.track.length - 1];
    if (!last || Math.hypot(last[0] - n.north_m, last[1] - n.east_m) > 0.3) state.track.push([n.north_m, n.east_m]);
    if (state.track.length > TRACK_MAX) state.track.splice(0, state.track.length - TRACK_MAX);
  }
  if (state.tab === "map") drawMap();
}

// ---------------------------------------------------------------- commands
async function command(body, el) { answer(el || $("answer"), await api("POST", "/api/command", body)); }
$("arm-button").addEventListener("click", () => command({ verb: "arm" }));
$("disarm-button").addEventListener("click", () => command({ verb: "disarm" }));
$("hold-button").addEventListener("click", () => command({ verb: "hold" }));
$("mode-button").addEventListener("click", () => command({ verb: "mode", mode: $("mode-select").value }));
$("mission-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const f = $("mission-file").files[0];
  if (!f) { answer($("map-answer"), { ok: false, text: "choose a mission file first" }); return; }
  const fd = new FormData();
  fd.append("file", f, f.name);
  answer($("map-answer"), await api("POST", "/api/mission", fd));
});
$("compass-start").addEventListener("click", async () => {
  const a = await api("POST", "/api/command", { verb: "mode", mode: "CALIBRATE_ON_WATER" });
  if (!a.ok) { answer($("compass-answer"), a); return; }
  answer($("compass-answer"), await api("POST", "/api/command", { verb: "arm" }));
});

// ---------------------------------------------------------------- map (local metres: north up, east right)
function mapView(canvas) {
  const pts = [];
  const geo = state.geometry;
  if (geo) {
    for (const w of geo.waypoints) pts.push(w);
    for (const f of geo.fences) for (const v of f) pts.push(v);
    if (geo.home) pts.push(geo.home);
  }
  for (const p of state.track) pts.push(p);
  const n = state.status && state.status.nav;
  if (n && n.valid) pts.push([n.north_m, n.east_m]);
  if (!pts.length) pts.push([0, 0]);
  let minN = Infinity, maxN = -Infinity, minE = Infinity, maxE = -Infinity;
  for (const [pn, pe] of pts) { minN = Math.min(minN, pn); maxN = Math.max(maxN, pn); minE = Math.min(minE, pe); maxE = Math.max(maxE, pe); }
  const pad = 24, spanN = Math.max(maxN - minN, 20), spanE = Math.max(maxE - minE, 20);
  const scale = Math.min((canvas.width - 2 * pad) / spanE, (canvas.height - 2 * pad) / spanN);
  const cN = (minN + maxN) / 2, cE = (minE + maxE) / 2;
  return { scale, xy: (pn, pe) => [canvas.width / 2 + (pe - cE) * scale, canvas.height / 2 - (pn - cN) * scale],
           ne: (x, y) => [cN - (y - canvas.height / 2) / scale, cE + (x - canvas.width / 2) / scale] };
}

function drawTiles(ctx, canvas, v) {
  // optional tiles (web mercator) under the drawing, placed through the local frame's origin
  const geo = state.geometry;
  if (!state.tilesUrl || !geo || geo.origin.lat_deg === null) return;
  const lat0 = geo.origin.lat_deg, lon0 = geo.origin.lon_deg, R = 6378137;
  const mPerDegLat = Math.PI * R / 180, mPerDegLon = mPerDegLat * Math.cos(lat0 * Math.PI / 180);
  const mPerPx = 1 / v.scale;
  const z = Math.max(0, Math.min(19, Math.round(Math.log2(2 * Math.PI * R * Math.cos(lat0 * Math.PI / 180) / (256 * mPerPx)))));
  const tileOf = (lat, lon) => {
    const nT = 2 ** z, lr = lat * Math.PI / 180;
    return [(lon + 180) / 360 * nT, (1 - Math.log(Math.tan(lr) + 1 / Math.cos(lr)) / Math.PI) / 2 * nT];
  };
  const latOf = (ty) => { const nT = 2 ** z; return Math.atan(Math.sinh(Math.PI * (1 - 2 * ty / nT))) * 180 / Math.PI; };
  const lonOf = (tx) => tx / 2 ** z * 360 - 180;
  const [nw, ne2] = [v.ne(0, 0), v.ne(canvas.width, canvas.height)];
  const a = tileOf(lat0 + nw[0] / mPerDegLat, lon0 + nw[1] / mPerDegLon);
  const b = tileOf(lat0 + ne2[0] / mPerDegLat, lon0 + ne2[1] / mPerDegLon);
  for (let tx = Math.floor(a[0]); tx <= Math.floor(b[0]) && tx - Math.floor(a[0]) < 8; tx++) {
    for (let ty = Math.floor(a[1]); ty <= Math.floor(b[1]) && ty - Math.floor(a[1]) < 8; ty++) {
      const url = state.tilesUrl.replace("{z}", z).replace("{x}", tx).replace("{y}", ty);
      let img = state.tiles[url];
      if (!img) { img = new Image(); img.onload = () => drawMap(); img.src = url; state.tiles[url] = img; }
      if (!img.complete || !img.naturalWidth) continue;
      const [x0, y0] = v.xy((latOf(ty) - lat0) * mPerDegLat, (lonOf(tx) - lon0) * mPerDegLon);
      const [x1, y1] = v.xy((latOf(ty + 1) - lat0) * mPerDegLat, (lonOf(tx + 1) - lon0) * mPerDegLon);
      ctx.drawImage(img, x0, y0, x1 - x0, y1 - y0);
    }
  }
}

function drawMap() {
  const canvas = $("map");
  if (!canvas || $("tab-map").hidden) return;
  const ctx = canvas.getContext("2d");
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  const v = mapView(canvas);
  drawTiles(ctx, canvas, v);
  const geo = state.geometry;
  if (geo) {
    ctx.strokeStyle = "#c00"; ctx.lineWidth = 2; ctx.setLineDash([6, 4]);
    for (const f of geo.fences) { ctx.beginPath(); f.forEach(([pn, pe], i) => { const [x, y] = v.xy(pn, pe); i ? ctx.lineTo(x, y) : ctx.moveTo(x, y); }); ctx.closePath(); ctx.stroke(); }
    ctx.setLineDash([]);
    ctx.strokeStyle = "#06c"; ctx.lineWidth = 2; ctx.beginPath();
    geo.waypoints.forEach(([pn, pe], i) => { const [x, y] = v.xy(pn, pe); i ? ctx.lineTo(x, y) : ctx.moveTo(x, y); });
    ctx.stroke();
    const idx = state.status ? state.status.mission.index : -1;
    geo.waypoints.forEach(([pn, pe], i) => {
      const [x, y] = v.xy(pn, pe);
      ctx.strokeStyle = ctx.fillStyle = i === idx ? "#f80" : "#06c"; ctx.lineWidth = 1.5;
      ctx.beginPath(); ctx.arc(x, y, Math.max(4, geo.acceptance_radius_m * v.scale), 0, 2 * Math.PI); ctx.stroke();
      ctx.beginPath(); ctx.arc(x, y, 3.5, 0, 2 * Math.PI); ctx.fill();
      ctx.fillStyle = "#000"; ctx.font = "13px sans-serif"; ctx.fillText(String(i + 1), x + 7, y - 7);
    });
    if (geo.home) { const [x, y] = v.xy(...geo.home); ctx.fillStyle = "#080"; ctx.fillRect(x - 6, y - 6, 12, 12); ctx.fillStyle = "#000"; ctx.fillText("H", x + 8, y + 4); }
  }
  if (state.target && state.status && state.status.mode === "GUIDED") {
    const [x, y] = v.xy(...state.target);
    ctx.strokeStyle = "#a0a"; ctx.lineWidth = 2; ctx.beginPath();
    ctx.moveTo(x - 8, y - 8); ctx.lineTo(x + 8, y + 8); ctx.moveTo(x + 8, y - 8); ctx.lineTo(x - 8, y + 8); ctx.stroke();
  }
  ctx.strokeStyle = "#888"; ctx.lineWidth = 1.5; ctx.beginPath();
  state.track.forEach(([pn, pe], i) => { const [x, y] = v.xy(pn, pe); i ? ctx.lineTo(x, y) : ctx.moveTo(x, y); });
  ctx.stroke();
  const n = state.status && state.status.nav;
  if (n && n.valid) {
    const [x, y] = v.xy(n.north_m, n.east_m), a = (n.heading_deg || 0) * Math.PI / 180;
    ctx.save(); ctx.translate(x, y); ctx.rotate(a);
    ctx.fillStyle = "#123"; ctx.beginPath(); ctx.moveTo(0, -14); ctx.lineTo(8, 10); ctx.lineTo(0, 5); ctx.lineTo(-8, 10); ctx.closePath(); ctx.fill();
    ctx.restore();
  }
  const meters = Math.pow(10, Math.floor(Math.log10(120 / v.scale)));
  ctx.strokeStyle = "#000"; ctx.lineWidth = 2; ctx.beginPath(); ctx.moveTo(10, canvas.height - 12); ctx.lineTo(10 + meters * v.scale, canvas.height - 12); ctx.stroke();
  ctx.fillStyle = "#000"; ctx.fillText(`${meters} m`, 14, canvas.height - 18); ctx.fillText("N ↑", canvas.width - 34, 20);
  text($("map-info"), geo ? `${geo.mission}: ${geo.waypoints.length} waypoints, ${geo.fences.length} fence(s)${geo.home ? ", home set" : ""}` : "");
  $("map-info").dataset.waypoints = geo ? geo.waypoints.length : 0;
}

// a tap on the map sends the boat there in GUIDED (once asked for with the checkbox, so a stray tap does nothing)
$("map").addEventListener("click", async (ev) => {
  if (!state.loggedIn || !$("guided-tap").checked) return;
  const canvas = $("map"), r = canvas.getBoundingClientRect();
  const x = (ev.clientX - r.left) * canvas.width / r.width, y = (ev.clientY - r.top) * canvas.height / r.height;
  const [pn, pe] = mapView(canvas).ne(x, y);
  state.target = [pn, pe];
  answer($("map-answer"), await api("POST", "/api/command", { verb: "goto", north_m: pn, east_m: pe }));
  drawMap();
});

// ---------------------------------------------------------------- compass
function drawCompass() {
  const c = state.compass, canvas = $("compass-canvas");
  if (!canvas || $("tab-compass").hidden) return;
  const ctx = canvas.getContext("2d");
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.strokeStyle = "#ccc"; ctx.beginPath(); ctx.moveTo(canvas.width / 2, 0); ctx.lineTo(canvas.width / 2, canvas.height);
  ctx.moveTo(0, canvas.height / 2); ctx.lineTo(canvas.width, canvas.height / 2); ctx.stroke();
  if (!c) return;
  const pts = c.samples_ut || [];
  const lim = Math.max(60, ...pts.map(([x, y]) => Math.max(Math.abs(x), Math.abs(y)))) * 1.1;
  const s = canvas.width / 2 / lim;
  ctx.fillStyle = "#06c";
  for (const [x, y] of pts) ctx.fillRect(canvas.width / 2 + y * s - 1.5, canvas.height / 2 - x * s - 1.5, 3, 3);
  ctx.fillStyle = "#000"; ctx.fillText(`±${lim.toFixed(0)} µT`, 6, 14);
  text($("compass-progress"), c.running ? `turned ${c.turned_deg} of ${c.target_deg}°, ${c.n_samples} samples` : "not running");
  const rows = [];
  if (c.last) {
    const f = c.last.figures || {};
    rows.push(["result", c.last.text]);
    for (const k of ["accepted", "coverage", "residual_rms_pct", "field_ratio", "anisotropy", "n_samples", "offset_ut"]) {
      if (k in f) rows.push([k, JSON.stringify(f[k])]);
    }
  }
  $("compass-figures").replaceChildren(...rows.map(([k, val]) => {
    const tr = document.createElement("tr"), a = document.createElement("td"), b = document.createElement("td");
    a.textContent = k; b.textContent = val; b.dataset.key = k; tr.append(a, b); return tr;
  }));
}

// ---------------------------------------------------------------- sensors (read twice a second while shown)
function checks(el, list) {
  el.replaceChildren(...list.map((c) => {
    const tr = document.createElement("tr"), a = document.createElement("td"), b = document.createElement("td");
    a.textContent = c.check; b.textContent = c.text;
    tr.className = c.ok === true ? "pass" : c.ok === false ? "fail" : "unjudged";
    tr.dataset.check = c.check; tr.dataset.ok = String(c.ok);
    tr.append(a, b); return tr;
  }));
}
async function loadSensors() {
  if (state.tab !== "sensors") return;
  const d = await api("GET", "/api/sensors");
  if (d.gnss) {
    text($("sensor-gnss"), d.gnss.lat_deg === null ? "no fix" : `${d.gnss.lat_deg}, ${d.gnss.lon_deg}`);
    checks($("checks-gnss"), d.gnss.checks);
    const i = d.imu, m = d.mag;
    text($("sensor-imu"), i.accel_mps2 ? `accel ${i.accel_mps2.join(", ")} m/s², gyro ${i.gyro_dps.join(", ")} °/s` : "no sample");
    checks($("checks-imu"), i.checks);
    text($("sensor-mag"), m.field_ut ? `field ${m.field_ut.join(", ")} µT` : "no sample");
    checks($("checks-mag"), m.checks);
  }
  setTimeout(loadSensors, 500);
}

// ---------------------------------------------------------------- ESC test: hold to run
let escTimer = null;
function escSend(fraction) {
  return api("POST", "/api/command", { verb: "esc_test", thruster: Number($("esc-thruster").value), fraction });
}
function escStart(ev) {
  ev.preventDefault();
  if (escTimer) return;
  const go = async () => { const a = await escSend(Number($("esc-fraction").value) / 100); if (!a.ok) { escStop(); answer($("esc-answer"), a); } };
  go();
  escTimer = setInterval(go, 200);
  answer($("esc-answer"), { ok: true, text: "running while held" });
}
async function escStop() {
  if (!escTimer) return;
  clearInterval(escTimer); escTimer = null;
  await escSend(0);
  answer($("esc-answer"), { ok: true, text: "stopped" });
}
$("esc-hold").addEventListener("pointerdown", escStart);
for (const e of ["pointerup", "pointerleave", "pointercancel"]) $("esc-hold").addEventListener(e, escStop);
window.addEventListener("blur", escStop);
$("esc-fraction").addEventListener("input", () => { const v = Number($("esc-fraction").value); text($("esc-fraction-text"), (v > 0 ? "+" : "") + v + " %"); });

// ---------------------------------------------------------------- parameters and logs
async function loadParams() {
  const d = await api("GET", "/api/params");
  const tbody = $("params-table").querySelector("tbody");
  tbody.replaceChildren(...(d.params || []).map((p) => {
    const tr = document.createElement("tr");
    const name = document.createElement("td"); name.textContent = p.name;
    const val = document.createElement("td"); const inp = document.createElement("input");
    inp.type = "number"; inp.step = "any"; inp.value = p.value; inp.id = "param-" + p.name; val.appendChild(inp);
    const unit = document.createElement("td"); unit.textContent = p.unit;
    const doc = document.createElement("td"); doc.textContent = p.doc + (p.choices.length ? ` (${p.choices.map((c, i) => i + " " + c).join(", ")})` : "") + (p.live ? "" : " (at the next start)");
    const go = document.createElement("td"); const b = document.createElement("button"); b.type = "button"; b.textContent = "Set"; b.id = "set-" + p.name;
    b.addEventListener("click", async () => answer($("params-answer"), await api("POST", "/api/params", { name: p.name, value: Number(inp.value) })));
    go.appendChild(b);
    tr.append(name, val, unit, doc, go);
    return tr;
  }));
}

async function loadLogs() {
  const d = await api("GET", "/api/logs");
  $("logs-list").replaceChildren(...(d.runs || []).map((r) => {
    const li = document.createElement("li");
    const s = r.summary ? " — " + Object.entries(r.summary).map(([k, v]) => `${k} ${v}`).join(", ") : "";
    li.textContent = `${r.name} (${(r.size_bytes / 1e6).toFixed(1)} MB)${s} `;
    const zip = document.createElement("a"); zip.href = `/api/logs/${encodeURIComponent(r.name)}.zip`; zip.textContent = "download";
    const plot = document.createElement("a"); plot.href = "#"; plot.textContent = "plot";
    plot.addEventListener("click", (ev) => { ev.preventDefault(); const img = $("log-plot"); img.src = `/api/logs/${encodeURIComponent(r.name)}/plot.png`; show(img, true); });
    li.append(zip, " ", plot);
    return li;
  }));
}

start();
