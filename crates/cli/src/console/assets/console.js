// kraftd console: plain JavaScript, no library. Routes on the URL hash, polls the current
// view's /api endpoint every 2 s, renders tables, and draws rates and lag as inline SVG.
"use strict";

const POLL_MS = 2000;
const HISTORY = 90; // points kept per chart (3 minutes at 2 s)
const history = { produce: [], fetch: [], lag: {} };
// Each listed topic's last end-offset sum and when it was read: records/s between polls.
const topicEnds = {};
let lastRequests = null;
let lastBytes = null;
let timer = null;
let firstData = null;

function esc(v) {
  return String(v === null || v === undefined ? "–" : v)
    .replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}
function list(a) { return Array.isArray(a) ? a.join(",") : ""; }
function table(head, rows) {
  return "<table><thead><tr>" + head.map(h => "<th>" + esc(h) + "</th>").join("") +
    "</tr></thead><tbody>" + rows.join("") + "</tbody></table>";
}
function cell(v, cls) { return "<td" + (cls ? " class=\"" + cls + "\"" : "") + ">" + esc(v) + "</td>"; }
function num(v) { return cell(v, "num"); }
function card(label, value, cls) {
  return "<div class=\"card\"><span>" + esc(label) + "</span><b class=\"" + (cls || "") + "\">" + esc(value) + "</b></div>";
}
function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + units[i];
}
function push(series, value) { series.push(value); if (series.length > HISTORY) series.shift(); }

// A line chart of `series` (numbers) as inline SVG.
function chart(id, title, series) {
  const w = 320, h = 70;
  const max = Math.max(1, ...series);
  const pts = series.map((v, i) =>
    (i * w / Math.max(1, HISTORY - 1)).toFixed(1) + "," + (h - 4 - v * (h - 14) / max).toFixed(1)).join(" ");
  const last = series.length ? series[series.length - 1] : 0;
  return "<div><div>" + esc(title) + ": <b id=\"" + id + "\">" + esc(Math.round(last * 10) / 10) +
    "</b> (max " + esc(Math.round(max * 10) / 10) + ")</div><svg class=\"chart\" width=\"" + w + "\" height=\"" + h +
    "\" viewBox=\"0 0 " + w + " " + h + "\"><polyline fill=\"none\" stroke=\"#3b6fd8\" stroke-width=\"1.5\" points=\"" +
    pts + "\"/></svg></div>";
}

// A 401 from the node: the cluster has an authorizer and this browser is not signed in.
class LoginRequired extends Error {
  constructor(body) { super("login required"); this.body = body; }
}

async function api(path) {
  const r = await fetch(path, { cache: "no-store", credentials: "same-origin" });
  const text = await r.text();
  if (r.status === 401) throw new LoginRequired(JSON.parse(text || "{}"));
  if (!r.ok) throw new Error(r.status + " " + text.trim());
  return JSON.parse(text);
}

// The login form (SASL username and password; the broker checks them).
function loginForm(body, error) {
  const mechanisms = (body && body.mechanisms) || [];
  return "<form id=\"login\"><h2>Sign in</h2><p>This cluster has an authorizer: sign in as a Kafka user " +
    "to see what your principal may describe.</p>" +
    "<label>Username <input name=\"username\" id=\"username\" autocomplete=\"username\"></label> " +
    "<label>Password <input name=\"password\" id=\"password\" type=\"password\" autocomplete=\"current-password\"></label> " +
    "<label>Mechanism <select name=\"mechanism\" id=\"mechanism\">" +
    mechanisms.map(m => "<option>" + esc(m) + "</option>").join("") + "</select></label> " +
    "<button type=\"submit\" id=\"login-submit\">Sign in</button>" +
    (error ? "<p class=\"bad\" id=\"login-error\">" + esc(error) + "</p>" : "") + "</form>";
}

function showLogin(body, error) {
  clearInterval(timer);
  document.getElementById("view").innerHTML = loginForm(body, error);
  document.getElementById("status").textContent = "not signed in";
  document.getElementById("login").addEventListener("submit", async ev => {
    ev.preventDefault();
    const form = new URLSearchParams(new FormData(ev.target));
    const r = await fetch("/api/login", { method: "POST", body: form, credentials: "same-origin" });
    const answer = JSON.parse((await r.text()) || "{}");
    if (r.ok) {
      start();
    } else {
      showLogin(body, answer.error || ("HTTP " + r.status));
    }
  });
}

async function logout() {
  await fetch("/api/logout", { method: "POST", credentials: "same-origin" });
  document.getElementById("who").textContent = "";
  start();
}

function route() {
  const hash = location.hash.replace(/^#/, "") || "/";
  const parts = hash.split("/").filter(Boolean).map(decodeURIComponent);
  const params = new URLSearchParams(hash.includes("?") ? hash.split("?")[1] : "");
  const page = parseInt(params.get("page") || "0", 10) || 0;
  if (parts.length && parts[parts.length - 1].includes("?")) parts[parts.length - 1] = parts[parts.length - 1].split("?")[0];
  return { view: parts[0] || "overview", arg: parts[1], page };
}

const views = {
  async overview() {
    const o = await api("/api/overview");
    document.getElementById("node-id").textContent = o.node_id;
    if (o.requests && lastRequests && o.requests.at_ms > lastRequests.at_ms) {
      const secs = (o.requests.at_ms - lastRequests.at_ms) / 1000;
      push(history.produce, Math.max(0, (o.requests.produce - lastRequests.produce) / secs));
      push(history.fetch, Math.max(0, (o.requests.fetch - lastRequests.fetch) / secs));
    }
    if (o.requests && (!lastRequests || o.requests.at_ms > lastRequests.at_ms)) lastRequests = o.requests;
    // Each broker's bytes in/out per second between the last two diagnoses.
    const byteRate = (id, dir) => {
      const now = o.bytes && o.bytes.brokers[id], then = lastBytes && lastBytes.brokers[id];
      if (!now || !then || o.bytes.at_ms <= lastBytes.at_ms) return "";
      return bytes(Math.max(0, (now[dir] - then[dir]) * 1000 / (o.bytes.at_ms - lastBytes.at_ms))) + "/s";
    };
    const health = ["healthy", "warnings", "critical"][o.health_status] || "unknown";
    const q = o.quorum;
    const controllers = q ? q.voters.concat(q.observers).map(r =>
      "<tr data-controller=\"" + r.id + "\">" + num(r.id) + cell(r.role) + num(r.log_end_offset) + num(r.lag) +
      num(r.last_fetch_ms_ago) + "</tr>") : [];
    const brokers = o.brokers.map(b =>
      "<tr data-broker=\"" + b.id + "\" data-state=\"" + esc(b.state) + "\">" + num(b.id) +
      cell(b.state, b.state === "running" ? "ok" : "bad") + cell(b.rack) + num(b.leaders) + num(b.replicas) +
      cell(byteRate(b.id, "in")) + cell(byteRate(b.id, "out")) + cell(b.endpoints.join(" ")) + "</tr>");
    if (o.bytes && (!lastBytes || o.bytes.at_ms > lastBytes.at_ms)) lastBytes = o.bytes;
    return "<h2>Cluster " + esc(o.cluster_id) + "</h2>" +
      (o.restricted ? "<p class=\"warn\" id=\"restricted\">" + esc(o.restricted) + "</p>" : "") +
      "<div class=\"cards\">" +
      card("health", health, o.health_status === 0 ? "ok" : o.health_status === 1 ? "warn" : "bad") +
      card("metadata.version", o.metadata_version) +
      card("brokers", o.brokers.length) + card("topics", o.topics) + card("partitions", o.partitions) +
      card("offline", o.offline_partitions, o.offline_partitions ? "bad" : "ok") +
      "<div class=\"card\" id=\"under-replicated\" data-count=\"" + o.under_replicated_partitions + "\"><span>under-replicated</span><b class=\"" +
      (o.under_replicated_partitions ? "bad" : "ok") + "\">" + esc(o.under_replicated_partitions) + "</b></div>" +
      card("under min ISR", o.under_min_isr_partitions, o.under_min_isr_partitions ? "bad" : "ok") +
      "</div>" +
      "<div class=\"cards\">" + chart("produce-rate", "Produce requests/s (this node)", history.produce) +
      chart("fetch-rate", "Consumer fetch requests/s (this node)", history.fetch) + "</div>" +
      "<h2>Features</h2><p>" + Object.entries(o.features || {}).map(([k, v]) => esc(k) + "=" + esc(v)).join(", ") + "</p>" +
      "<h2>Controllers</h2>" + (q ? "<p>Leader " + esc(q.leader_id) + ", epoch " + esc(q.leader_epoch) +
        ", high watermark " + esc(q.high_watermark) + "</p>" +
        table(["id", "role", "log end", "lag (records)", "last fetch (ms ago)"], controllers) : "<p>DescribeQuorum not answered</p>") +
      "<h2>Brokers</h2>" + table(["id", "state", "rack", "leaders", "replicas", "bytes in", "bytes out", "endpoints"], brokers);
  },

  async topics(r) {
    if (r.arg) return topic(r.arg, r.page);
    const t = await api("/api/topics?page=" + r.page);
    const now = Date.now();
    const rate = x => {
      if (x.end_offsets === undefined) return "";
      const last = topicEnds[x.name];
      topicEnds[x.name] = { end: x.end_offsets, at: now };
      if (!last || now <= last.at) return "";
      return Math.max(0, (x.end_offsets - last.end) * 1000 / (now - last.at)).toFixed(1);
    };
    const rows = t.topics.map(x =>
      "<tr data-topic=\"" + esc(x.name) + "\" data-size=\"" + esc(x.size_bytes ?? "") + "\"><td><a href=\"#/topics/" +
      encodeURIComponent(x.name) + "\">" + esc(x.name) +
      "</a></td>" + num(x.partitions) + num(x.replication_factor) +
      cell(x.under_replicated, x.under_replicated ? "bad" : "") + cell(x.offline, x.offline ? "bad" : "") +
      cell(x.under_min_isr, x.under_min_isr ? "bad" : "") +
      cell(x.size_bytes === undefined ? "" : bytes(x.size_bytes)) + cell(rate(x)) + "</tr>");
    return "<h2>Topics (" + esc(t.total) + ")</h2>" +
      table(["topic", "partitions", "replication", "under-replicated", "offline", "under min ISR",
        "size (all replicas)", "records/s in"], rows) +
      pager("#/topics", t);
  },

  async groups(r) {
    if (r.arg) return group(r.arg);
    const g = await api("/api/groups");
    const rows = g.groups.map(x =>
      "<tr data-group=\"" + esc(x.group_id) + "\"><td><a href=\"#/groups/" + encodeURIComponent(x.group_id) + "\">" +
      esc(x.group_id) + "</a></td>" + cell(x.type) + cell(x.protocol_type) + cell(x.state) + num(x.coordinator) + "</tr>");
    return "<h2>Groups (" + g.groups.length + ")</h2>" +
      table(["group", "type", "protocol type", "state", "coordinator"], rows) +
      (g.errors.length ? "<p class=\"warn\">" + g.errors.map(esc).join("<br>") + "</p>" : "");
  },

  async transactions() {
    const t = await api("/api/transactions");
    const age = ms => ms === null || ms === undefined ? "–" : (ms / 1000).toFixed(1) + " s";
    const rows = t.transactions.map(x =>
      "<tr data-transaction=\"" + esc(x.transactional_id) + "\" data-state=\"" + esc(x.state) + "\">" +
      cell(x.transactional_id) + cell(x.state) + num(x.coordinator) + num(x.producer_id) + num(x.producer_epoch) +
      cell(age(x.age_ms), x.age_ms > x.timeout_ms ? "bad" : "") + num(x.timeout_ms) + cell(x.partitions.join(" ")) + "</tr>");
    const hanging = t.hanging.map(h =>
      "<tr data-hanging=\"" + esc(h.topic) + "-" + h.partition + "\">" + cell(h.topic) + num(h.partition) + num(h.leader) +
      num(h.producer_id) + num(h.producer_epoch) + num(h.start_offset) + cell(age(h.age_ms), "bad") +
      cell(h.transactional_id) + "</tr>");
    return "<h2>Transactions</h2>" + table(["transactional id", "state", "coordinator", "producer id", "epoch",
      "open for", "timeout ms", "partitions"], rows) +
      "<h2>Hanging</h2><p>Open transactions older than " + esc(t.max_timeout_ms / 60000) +
      " minutes that no coordinator will finish (<code>kafka-transactions find-hanging</code>'s rule; checked " +
      esc(new Date(t.hanging_checked_at_ms).toLocaleTimeString()) + ").</p>" +
      (hanging.length ? table(["topic", "partition", "leader", "producer id", "epoch", "start offset", "open for",
        "transactional id"], hanging) : "<p class=\"ok\" id=\"no-hanging\">none</p>") +
      (t.errors.length ? "<p class=\"warn\">" + esc(t.errors.join("; ")) + "</p>" : "");
  },
  async health() {
    const h = await api("/api/health");
    const rows = h.findings.map(f =>
      "<tr data-severity=\"" + f.severity + "\">" + cell(f.severity.toUpperCase(), f.severity === "critical" ? "bad" : "warn") +
      cell(f.text) + "</tr>");
    return "<h2>Health</h2>" + (h.healthy ? "<p class=\"ok\" id=\"healthy\">" + esc(h.healthy) + "</p>" :
      table(["severity", "finding"], rows));
  },
};

function pager(base, t) {
  const pages = Math.max(1, Math.ceil(t.total / t.page_size));
  if (pages <= 1) return "";
  let s = "<div class=\"pager\">Page " + (t.page + 1) + " of " + pages + " ";
  if (t.page > 0) s += "<a href=\"" + base + "?page=" + (t.page - 1) + "\">previous</a> ";
  if (t.page + 1 < pages) s += "<a href=\"" + base + "?page=" + (t.page + 1) + "\">next</a>";
  return s + "</div>";
}

async function topic(name, page) {
  const t = await api("/api/topics/" + encodeURIComponent(name) + "?page=" + page);
  const rows = t.partitions.map(p =>
    "<tr data-partition=\"" + p.partition + "\" data-leader=\"" + p.leader + "\" data-isr=\"" + list(p.isr) + "\">" +
    num(p.partition) + cell(p.leader, p.leader < 0 ? "bad" : "") + cell(list(p.replicas)) +
    cell(list(p.isr), p.under_replicated ? "bad" : "") + cell(list(p.elr)) + num(p.log_start) + num(p.high_watermark) +
    num(p.last_stable) + "<td data-sizes=\"" + p.partition + "\">" +
    esc(Object.entries(p.sizes || {}).map(([b, n]) => b + ": " + bytes(n)).join(", ")) + "</td></tr>");
  const configs = t.configs.map(c => "<tr>" + cell(c.name) + cell(c.value) + cell(c.source) + "</tr>");
  return "<h2>Topic " + esc(t.name) + "</h2><p>id " + esc(t.id) + ", " + esc(t.total) + " partitions</p>" +
    table(["partition", "leader", "replicas", "ISR", "ELR", "log start", "high watermark", "LSO",
      "size per replica (broker: bytes)"], rows) +
    pager("#/topics/" + encodeURIComponent(name), t) +
    "<h2>Configs set on the topic</h2>" + (configs.length ? table(["name", "value", "source"], configs) : "<p>none (every config at its default)</p>");
}

async function group(id) {
  const g = await api("/api/groups/" + encodeURIComponent(id));
  if (g.error) return "<h2>Group " + esc(id) + "</h2><p class=\"bad\">" + esc(g.error) + "</p>";
  const lag = history.lag[id] || (history.lag[id] = []);
  push(lag, g.total_lag);
  const members = g.members.map(m =>
    "<tr>" + cell(m.member_id) + cell(m.client_id) + cell(m.host) +
    cell(m.active_tasks ? "active " + m.active_tasks.join(",") + "; standby " + m.standby_tasks.join(",") +
      (m.warmup_tasks.length ? "; warm-up " + m.warmup_tasks.join(",") : "") :
      m.assignment.map(a => a.topic + ":" + a.partitions.join(",")).join(" ")) + "</tr>");
  const parts = g.partitions.map(p =>
    "<tr data-topic=\"" + esc(p.topic) + "\" data-partition=\"" + p.partition + "\" data-lag=\"" + esc(p.lag) + "\">" +
    cell(p.topic) + num(p.partition) + num(p.committed) + num(p.log_end) + num(p.lag) +
    cell(g.protocol_type === "share" ? p.member_id : p.client_id) + "</tr>");
  return "<h2>Group " + esc(g.group_id) + "</h2><p>state " + esc(g.state) + ", protocol " + esc(g.protocol_type) +
    " (" + esc(g.assignor) + "), coordinator " + esc(g.coordinator) + ", total lag <b id=\"total-lag\">" + esc(g.total_lag) + "</b></p>" +
    chart("lag-now", "Total lag", lag) +
    "<h2>Partitions</h2>" + table(["topic", "partition", g.protocol_type === "share" ? "start offset" : "committed offset",
      "log end", "lag", g.protocol_type === "share" ? "members" : "client"], parts) +
    "<h2>Members</h2>" + table(["member", "client", "host", "assignment"], members);
}

async function refresh() {
  const r = route();
  document.querySelectorAll("[data-nav]").forEach(a => a.classList.toggle("active", a.dataset.nav === r.view));
  const view = views[r.view] || views.overview;
  const status = document.getElementById("status");
  try {
    const html = await view(r);
    document.getElementById("view").innerHTML = html;
    status.textContent = "updated " + new Date().toLocaleTimeString();
    if (firstData === null) {
      firstData = Math.round(performance.now());
      document.getElementById("first-data").textContent = firstData;
    }
  } catch (e) {
    if (e instanceof LoginRequired) {
      showLogin(e.body);
      return;
    }
    status.textContent = "error: " + e.message;
    document.getElementById("view").innerHTML = "<p class=\"bad\" id=\"error\">" + esc(e.message) + "</p>";
  }
}

// The first contentful paint, whenever the browser reports it (the Performance API).
try {
  new PerformanceObserver(list => {
    for (const e of list.getEntries()) {
      if (e.name === "first-contentful-paint") document.getElementById("first-paint").textContent = Math.round(e.startTime);
    }
  }).observe({ type: "paint", buffered: true });
} catch (e) { /* no paint timing in this browser */ }

// Who is signed in (a cluster with an authorizer), for the header.
async function whoami() {
  try {
    const w = await api("/api/whoami");
    document.getElementById("who").textContent = w.principal ? w.principal + " " : "";
    document.getElementById("logout").style.display = w.principal ? "" : "none";
  } catch (e) { /* not signed in: the view shows the form */ }
}

function start() {
  clearInterval(timer);
  whoami();
  refresh();
  timer = setInterval(refresh, POLL_MS);
}
window.addEventListener("hashchange", start);
start();
