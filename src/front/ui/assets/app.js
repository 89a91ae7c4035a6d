// The web view of mcp-sandbox: reads /ui/api/... (same origin only) and draws executions, one
// execution's waterfall, the tool graph and capabilities. Every value from the server is put
// in the page as text (textContent, SVG attributes), never as markup. Live updates: the current
// view is fetched again once a second (POLL_MS); it is redrawn only when its data changed.
"use strict";

const POLL_MS = 1000;
const SVG = "http://www.w3.org/2000/svg";
const state = { me: null, tenant: null, token: sessionStorage.getItem("mcp-sandbox-token"), last: "", approvalsKey: "", busy: false };

// Controls and characters that move or reorder text (C0 but line breaks and tabs, DEL, C1, the
// line and paragraph separators, the bidirectional controls) are shown as visible escapes, as
// the terminal shows them (src/term.rs): an argument holding U+202E cannot make the bytes
// "moc.live@ecila" read as another address, in a list or in a detail view.
const HAZARDS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

function visible(s) {
  return String(s).replace(HAZARDS, (c) => {
    const n = c.codePointAt(0);
    if (c === "\r") return "\\r";
    if (c === "\x1b") return "\\e";
    if (n < 0x100) return "\\x" + n.toString(16).padStart(2, "0");
    return "\\u{" + n.toString(16).padStart(4, "0") + "}";
  });
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, k === "title" ? visible(v) : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : visible(c));
  return e;
}

function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  for (const c of children) e.append(c instanceof Node ? c : visible(c));
  return e;
}

function ms(v) {
  if (v === null || v === undefined) return "";
  if (v >= 1000) return (v / 1000).toFixed(2) + " s";
  return v.toFixed(1) + " ms";
}

function when(ts) {
  const d = new Date(ts);
  return d.toLocaleString(undefined, { hour12: false });
}

async function api(path) {
  const headers = state.token ? { Authorization: "Bearer " + state.token } : {};
  const r = await fetch(path, { headers, cache: "no-store", credentials: "omit" });
  if (r.status === 401) {
    document.getElementById("login").hidden = false;
    throw new Error("this gateway needs a credential");
  }
  const body = await r.json();
  if (!r.ok) throw new Error((body.error && body.error.code + ": " + body.error.message) || r.statusText);
  return body;
}

function route() {
  const h = location.hash.replace(/^#/, "") || "/";
  const m = h.match(/^\/exec\/(\d+)$/);
  if (m) return { view: "exec", id: m[1] };
  if (h.startsWith("/graph")) return { view: "graph" };
  if (h.startsWith("/capabilities")) return { view: "capabilities" };
  if (h.startsWith("/network")) return { view: "network" };
  const l = h.match(/^\/labels(?:\/(.+))?$/);
  if (l) return { view: "labels", principal: l[1] ? decodeURIComponent(l[1]) : null };
  return { view: "list" };
}

function tenantParam() {
  return state.tenant ? "tenant=" + encodeURIComponent(state.tenant) : "";
}

function outcomeClass(o) {
  return o === "OK" ? "ok" : o === "RUNNING" ? "running" : "failed";
}

// ---- executions -----------------------------------------------------------------------------

const filters = { outcome: "", tool: "", principal: "" };

function filterBar() {
  const bar = el("div", { class: "filters" });
  for (const [k, ph] of [["outcome", "outcome (OK, TOOL_ERROR, …)"], ["tool", "tool (server:tool)"], ["principal", "principal"]]) {
    const i = el("input", { id: "filter-" + k, placeholder: ph, value: filters[k] });
    i.addEventListener("change", () => { filters[k] = i.value.trim(); state.last = ""; refresh(); });
    bar.append(i);
  }
  return bar;
}

async function listView(main) {
  const q = [];
  for (const k of Object.keys(filters)) if (filters[k]) q.push(k + "=" + encodeURIComponent(filters[k]));
  if (state.tenant && !(state.me && state.me.operator && state.tenant === "*")) q.push(tenantParam());
  const data = await api("/ui/api/executions?" + q.filter(Boolean).join("&"));
  const key = "list" + JSON.stringify(data) + JSON.stringify(filters);
  if (key === state.last) return;
  state.last = key;
  const focused = document.activeElement && document.activeElement.id;
  const table = el("table", { id: "executions" },
    el("thead", {}, el("tr", {}, ...["#", "when", "principal", "tenant", "outcome", "duration", "calls", "tools"].map((h) => el("th", {}, h)))));
  const body = el("tbody");
  for (const x of data.executions) {
    const row = el("tr", { class: "exec-row", "data-id": x.id, "data-outcome": x.outcome, onclick: () => { location.hash = "#/exec/" + x.id; } },
      el("td", {}, el("a", { href: "#/exec/" + x.id }, "#" + x.id)),
      el("td", {}, when(x.ts)),
      el("td", {}, x.principal),
      el("td", {}, x.tenant),
      el("td", {}, el("span", { class: "outcome " + outcomeClass(x.outcome) }, x.outcome)),
      el("td", {}, x.outcome === "RUNNING" ? "…" : ms(x.duration_ms)),
      el("td", {}, x.failed_calls ? x.calls + " (" + x.failed_calls + " failed)" : x.calls),
      el("td", { class: "muted" }, x.tools.join(", ")));
    body.append(row);
  }
  table.append(body);
  // replaceChildren, unlike el(), would show a null child as the text "null".
  const empty = data.executions.length ? [] : [el("p", { class: "muted", id: "empty" }, "No executions match.")];
  main.replaceChildren(el("h2", {}, "Recent executions"), filterBar(), table, ...empty);
  if (focused && document.getElementById(focused)) document.getElementById(focused).focus();
}

// ---- one execution: the waterfall -------------------------------------------------------------

function calls(rec) {
  const traces = (rec.detail && rec.detail.traces) || [];
  const ends = new Map(), approvals = new Map(), byId = new Map(), out = [], events = [];
  for (const e of traces) {
    if (e.type === "tool_end" || e.type === "capability_end") ends.set(e.trace_id, e);
    if (e.type.startsWith("approval_")) {
      const a = approvals.get(e.trace_id) || {};
      if (e.type === "approval_requested") a.requested = e; else a.answer = e;
      approvals.set(e.trace_id, a);
    }
    if (e.type === "flow_decision" || e.type === "label_added" || e.type === "capability_author_changed") events.push(e);
  }
  for (const e of traces) {
    if (e.type !== "tool_start" && e.type !== "capability_start") continue;
    const end = ends.get(e.trace_id);
    const c = { start: e, end, kind: e.type === "capability_start" ? "capability" : "tool", approval: approvals.get(e.trace_id) };
    const parent = e.parent_trace_id && byId.get(e.parent_trace_id);
    c.depth = parent ? parent.depth + 1 : 0;
    byId.set(e.trace_id, c);
    out.push(c);
  }
  // Approval waits of calls that never started (denied before the start) are events too.
  for (const [id, a] of approvals) if (!byId.has(id) && a.requested) events.push(a.answer || a.requested);
  return { calls: out, events };
}

function waterfall(rec) {
  const { calls: cs, events } = calls(rec);
  const t0 = rec.ts;
  const now = Date.now();
  let total = rec.duration_ms || 0;
  const span = (c) => {
    const off = Math.max(0, c.start.ts - t0);
    const dur = c.end ? (c.end.duration_ms ?? Math.max(0, c.end.ts - c.start.ts)) : Math.max(0, now - c.start.ts);
    return [off, dur];
  };
  for (const c of cs) { const [o, d] = span(c); total = Math.max(total, o + d); }
  for (const e of events) total = Math.max(total, e.ts - t0);
  total = Math.max(total, 1);
  const pct = (v) => (100 * v / total).toFixed(3) + "%";
  const box = el("div", { class: "waterfall", id: "waterfall" });
  for (const c of cs) {
    const [off, dur] = span(c);
    const failed = c.end ? c.end.success === false : false;
    const track = el("div", { class: "wf-track" });
    if (c.approval && c.approval.requested) {
      const a = c.approval, from = a.requested.ts - t0, to = (a.answer ? a.answer.ts : now) - t0;
      const wait = el("div", { class: "wf-wait", title: "waiting for approval" });
      wait.style.left = pct(Math.max(0, from)); wait.style.width = pct(Math.max(0, to - from));
      track.append(wait);
    }
    const bar = el("div", { class: "wf-bar", title: c.start.tool + " " + ms(dur) });
    bar.style.left = pct(off); bar.style.width = pct(dur);
    track.append(bar);
    const name = el("div", { class: "wf-name", title: c.start.tool }, (c.kind === "capability" ? "◆ " : "") + c.start.tool);
    name.style.paddingLeft = (6 + 16 * c.depth) + "px";
    const notes = [];
    if (failed && c.end.error) notes.push(c.end.error.code);
    if (c.approval && c.approval.answer) notes.push("approval " + (c.approval.answer.type === "approval_granted" ? "granted" : "denied") + " by " + (c.approval.answer.by || "?") + " after " + ms(c.approval.answer.ts - c.approval.requested.ts));
    else if (c.approval) notes.push("waiting for approval");
    if (!c.end) notes.push("running");
    box.append(el("div", {
      class: "wf-row " + c.kind + (failed ? " failed" : ""), "data-tool": c.start.tool, "data-depth": c.depth,
      "data-duration-ms": c.end ? dur : "", "data-offset-ms": off.toFixed(3), "data-failed": failed,
    }, name, track, el("div", { class: "wf-dur" }, c.end ? ms(dur) : "…"), el("div", { class: "wf-note", title: notes.join("; ") }, notes.join("; "))));
  }
  for (const e of events) {
    const track = el("div", { class: "wf-track" });
    const mark = el("div", { class: "wf-mark" });
    mark.style.left = pct(Math.max(0, e.ts - t0));
    track.append(mark);
    const what = e.type === "flow_decision" ? "flow " + (e.decision || "") + ": " + e.tool
      : e.type === "label_added" ? "label " + (e.label || "") + " from " + e.tool
      : e.type === "capability_author_changed" ? "author changed: " + e.tool
      : e.type.replace("_", " ") + ": " + e.tool;
    const note = [e.rule, e.label, e.by].filter(Boolean).join(" · ");
    box.append(el("div", { class: "wf-row event", "data-event": e.type },
      el("div", { class: "wf-name", title: what }, "⚑ " + what), track, el("div", { class: "wf-dur" }, "+" + ms(e.ts - t0)), el("div", { class: "wf-note", title: note }, note)));
  }
  if (!cs.length && !events.length) box.append(el("div", { class: "wf-row" }, el("div", { class: "wf-name muted" }, "no tool calls")));
  const axis = el("div", { class: "wf-axis" }, el("span", {}, "0"), el("span", {}, ms(total / 2)), el("span", {}, ms(total)));
  return [axis, box];
}

async function execView(main, id) {
  const rec = await api("/ui/api/executions/" + id);
  const key = "exec" + JSON.stringify(rec) + (rec.outcome === "RUNNING" ? Date.now() : "");
  if (key === state.last) return;
  state.last = key;
  const d = rec.detail || { logs: [], traces: [] };
  const parts = [
    el("p", {}, el("a", { href: "#/" }, "← executions")),
    el("h2", { id: "exec-title", "data-id": rec.id }, "Execution #" + rec.id + " ", el("span", { class: "outcome " + outcomeClass(rec.outcome), id: "exec-outcome" }, rec.outcome)),
    el("p", { class: "meta" },
      el("span", {}, when(rec.ts)), el("span", {}, "principal " + rec.principal), el("span", {}, "tenant " + rec.tenant),
      el("span", {}, "via " + rec.front + (rec.client ? " (" + rec.client + ")" : "")),
      el("span", {}, rec.outcome === "RUNNING" ? "running" : ms(rec.duration_ms)),
      rec.labels && rec.labels.length ? el("span", {}, "labels " + rec.labels.join(", ")) : null),
    el("h3", {}, "Calls over time"),
    ...waterfall(rec),
  ];
  if (d.traces_dropped) parts.push(el("p", { class: "muted" }, d.traces_dropped + " later trace events were not kept."));
  if (d.error) parts.push(el("h3", {}, "Error"), el("pre", { id: "exec-error", class: "error" }, d.error.code + (d.error.message ? ": " + d.error.message : "")));
  parts.push(el("h3", {}, "Logs"));
  parts.push(d.logs.length ? el("pre", { id: "exec-logs" }, d.logs.map((l) => "[" + l.level + "] " + l.message).join("\n")) : el("p", { class: "muted" }, "No logs kept (none printed, or the audit log keeps hashes only)."));
  if (d.logs_dropped) parts.push(el("p", { class: "muted" }, d.logs_dropped + " later log lines were not kept."));
  parts.push(el("h3", {}, "Code"));
  parts.push(rec.code !== null && rec.code !== undefined ? el("pre", { id: "exec-code" }, rec.code) : el("p", { class: "muted" }, "Kept as a hash only: sha256 " + rec.code_sha256));
  main.replaceChildren(...parts);
}

// ---- the tool graph ---------------------------------------------------------------------------

async function graphView(main) {
  const g = await api("/ui/api/graph?" + tenantParam());
  const key = "graph" + JSON.stringify(g);
  if (key === state.last) return;
  state.last = key;
  const W = 900, H = 620, cx = W / 2, cy = H / 2, R = Math.min(W, H) / 2 - 110;
  const n = g.tools.length;
  const pos = new Map();
  g.tools.forEach((t, i) => {
    const a = -Math.PI / 2 + (2 * Math.PI * i) / Math.max(n, 1);
    pos.set(t.tool, { x: n === 1 ? cx : cx + R * Math.cos(a), y: n === 1 ? cy : cy + R * Math.sin(a), a });
  });
  const maxCalls = Math.max(1, ...g.tools.map((t) => t.calls));
  const radius = (t) => 10 + 22 * Math.sqrt(t.calls / maxCalls);
  const rOf = new Map(g.tools.map((t) => [t.tool, radius(t)]));
  const root = svg("svg", { class: "graph", id: "graph", viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "tool graph" },
    svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 10, markerHeight: 10, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" },
      svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#8a99a8" }))));
  const maxCount = Math.max(1, ...g.edges.map((e) => e.count));
  for (const e of g.edges) {
    const s = pos.get(e.source), t = pos.get(e.target);
    if (!s || !t) continue;
    const width = (1 + 5 * e.count / maxCount).toFixed(2);
    const attrs = { class: "edge", "data-source": e.source, "data-target": e.target, "data-count": e.count, "stroke-width": width, fill: "none" };
    let lx, ly;
    if (e.source === e.target) {
      // A loop on the node's side that faces the centre (its label is on the outer side).
      const r = rOf.get(e.source), b = n === 1 ? -Math.PI / 2 : s.a + Math.PI;
      const p1 = [s.x + Math.cos(b - 0.5) * r, s.y + Math.sin(b - 0.5) * r];
      const p2 = [s.x + Math.cos(b + 0.5) * r, s.y + Math.sin(b + 0.5) * r];
      const far = r + 50;
      const c1 = [s.x + Math.cos(b - 0.6) * far, s.y + Math.sin(b - 0.6) * far];
      const c2 = [s.x + Math.cos(b + 0.6) * far, s.y + Math.sin(b + 0.6) * far];
      root.append(svg("path", { ...attrs, d: `M${p1[0].toFixed(1)},${p1[1].toFixed(1)} C${c1[0].toFixed(1)},${c1[1].toFixed(1)} ${c2[0].toFixed(1)},${c2[1].toFixed(1)} ${p2[0].toFixed(1)},${p2[1].toFixed(1)}`, "marker-end": "url(#arrow)" }));
      lx = s.x + Math.cos(b) * (r + 46); ly = s.y + Math.sin(b) * (r + 46);
    } else {
      const dx = t.x - s.x, dy = t.y - s.y, len = Math.hypot(dx, dy) || 1;
      const rs = rOf.get(e.source), rt = rOf.get(e.target) + 3;
      root.append(svg("line", { ...attrs, x1: s.x + dx * rs / len, y1: s.y + dy * rs / len, x2: t.x - dx * rt / len, y2: t.y - dy * rt / len, "marker-end": "url(#arrow)" }));
      lx = (s.x + t.x) / 2 + (dy / len) * 10; ly = (s.y + t.y) / 2 - (dx / len) * 10;
    }
    root.append(svg("text", { class: "count", x: lx.toFixed(1), y: ly.toFixed(1), "text-anchor": "middle" }, "×" + e.count));
  }
  for (const t of g.tools) {
    const p = pos.get(t.tool), r = rOf.get(t.tool);
    const rate = t.calls ? t.successes / t.calls : 0;
    const fill = `hsl(${Math.round(120 * rate)}, 55%, 55%)`;
    const out = Math.cos(p.a) >= 0 ? "start" : "end";
    const lx = n === 1 ? p.x : p.x + Math.cos(p.a) * (r + 8), ly = n === 1 ? p.y + r + 16 : p.y + Math.sin(p.a) * (r + 8);
    root.append(svg("g", { class: "node", "data-tool": t.tool, "data-calls": t.calls, "data-success-rate": rate.toFixed(3) },
      svg("title", {}, `${t.tool}: ${t.calls} calls, ${t.failures} failed, mean ${ms(t.mean_ms)}, p95 ${ms(t.p95_ms)}`),
      svg("circle", { cx: p.x.toFixed(1), cy: p.y.toFixed(1), r: r.toFixed(1), fill, stroke: "#34495e" }),
      svg("text", { x: lx.toFixed(1), y: ly.toFixed(1), "text-anchor": n === 1 ? "middle" : out, "dominant-baseline": "middle" },
        svg("tspan", {}, t.tool), svg("tspan", { x: lx.toFixed(1), dy: "1.2em", class: "count" }, `${t.calls} call${t.calls === 1 ? "" : "s"} · ${Math.round(100 * rate)}% ok`))));
  }
  main.replaceChildren(el("h2", {}, "Tool graph" + (g.tenant ? " of tenant " + g.tenant : "")),
    el("p", { class: "muted" }, "A node is a tool (its size: calls; its colour: success rate, green = all succeeded); an arrow A → B counts how often B was the next successful call after A in one script."),
    n ? root : el("p", { class: "muted", id: "empty" }, "No tool calls learned yet."));
}

// ---- capabilities -----------------------------------------------------------------------------

async function capabilitiesView(main) {
  const c = await api("/ui/api/capabilities?" + tenantParam());
  const key = "caps" + JSON.stringify(c);
  if (key === state.last) return;
  state.last = key;
  const list = c.capabilities.map((x) => el("div", { class: "cap", "data-name": x.name },
    el("h3", {}, "mcp." + x.name.replace(":", ".") + "()  ", el("span", { class: "muted" }, "v" + x.version + " · by " + (x.author || "unknown") + " · " + when(x.created_at))),
    x.description ? el("p", {}, x.description) : null,
    el("h3", {}, "Input schema"), el("pre", {}, x.input_schema ? JSON.stringify(x.input_schema, null, 2) : "(none)"),
    el("h3", {}, "Code"), el("pre", {}, x.code)));
  main.replaceChildren(el("h2", {}, "Capabilities" + (c.tenant ? " of tenant " + c.tenant : "")),
    ...(list.length ? list : [el("p", { class: "muted", id: "empty" }, "No capabilities saved.")]));
}

// ---- pending approvals ------------------------------------------------------------------------

// Questions waiting for a person that this viewer may answer (GET /ui/api/approvals), each with
// Approve / Approve for this execution / Deny (+ reason); answered with a same-origin JSON POST.
async function answerApproval(id, decision, reason) {
  const headers = { "Content-Type": "application/json" };
  if (state.token) headers.Authorization = "Bearer " + state.token;
  const body = { id, decision };
  if (reason) body.reason = reason;
  const r = await fetch("/ui/api/approvals", { method: "POST", headers, body: JSON.stringify(body), cache: "no-store", credentials: "omit" });
  const answer = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error((answer.error && answer.error.code + ": " + answer.error.message) || r.statusText);
  state.approvalsKey = "";
  return answer;
}

async function approvalsPanel() {
  const panel = document.getElementById("approvals");
  if (!state.me || !state.me.approve) { panel.hidden = true; return; }
  const data = await api("/ui/api/approvals");
  const key = JSON.stringify(data.approvals.map((q) => q.id));
  if (key === state.approvalsKey) return;
  state.approvalsKey = key;
  // Reasons being typed survive a redraw.
  const typed = new Map([...panel.querySelectorAll(".approval")].map((d) => [d.dataset.id, d.querySelector("input.reason").value]));
  panel.hidden = data.approvals.length === 0;
  const items = data.approvals.map((q) => {
    const reason = el("input", { class: "reason", placeholder: "reason (when denying)", maxlength: 500 });
    reason.value = typed.get(q.id) || "";
    const note = el("span", { class: "error" });
    const send = (decision) => async () => {
      try { await answerApproval(q.id, decision, reason.value.trim()); refresh(); } catch (e) { note.textContent = String(e.message || e); }
    };
    return el("div", { class: "approval", "data-id": q.id },
      el("div", { class: "meta" },
        el("strong", { class: "tool" }, q.tool),
        el("span", {}, "by " + q.principal + " · tenant " + q.tenant),
        el("span", { class: "muted" }, "asked by the " + q.rule + " at " + when(q.asked_at))),
      el("pre", { class: "args" }, q.arguments + (q.truncated ? "\n… (cut: " + q.arguments_bytes + " bytes in all)" : "")),
      el("div", { class: "actions" },
        el("button", { type: "button", class: "approve", onclick: send("approve") }, "Approve"),
        el("button", { type: "button", class: "approve-exec", onclick: send("approve_for_execution") }, "Approve for this execution"),
        el("button", { type: "button", class: "deny", onclick: send("deny") }, "Deny"),
        reason, note));
  });
  panel.replaceChildren(el("h2", {}, "Pending approvals (" + data.approvals.length + ")"), ...items);
}

// ---- data-flow labels --------------------------------------------------------------------------

// What a principal's sessionless (MCP 2026-07-28) executions read, which stays with it
// (GET /ui/api/labels); an operator may look up any principal and clear them (audited).
async function labelsView(main) {
  const r = route();
  const who = r.principal || state.me.principal;
  const q = "/ui/api/labels?principal=" + encodeURIComponent(who) + (state.tenant && state.tenant !== "*" ? "&tenant=" + encodeURIComponent(state.tenant) : "");
  const data = await api(q);
  const key = "labels " + JSON.stringify(data);
  if (key === state.last) return;
  state.last = key;
  const lookup = el("input", { id: "labels-principal", placeholder: "token:NAME", value: who });
  const note = el("span", { class: "error" });
  const rows = data.labels.map((l) => el("tr", {},
    el("td", { class: "label" }, l.label), el("td", {}, l.tool), el("td", { class: "muted" }, l.execution || "")));
  const clear = async () => {
    const headers = { "Content-Type": "application/json" };
    if (state.token) headers.Authorization = "Bearer " + state.token;
    const res = await fetch("/ui/api/labels/clear", { method: "POST", headers, body: JSON.stringify({ principal: data.principal, tenant: data.tenant }), cache: "no-store", credentials: "omit" });
    const answer = await res.json().catch(() => ({}));
    if (!res.ok) { note.textContent = (answer.error && answer.error.code + ": " + answer.error.message) || res.statusText; return; }
    state.last = ""; refresh();
  };
  main.replaceChildren(
    el("h2", {}, "Data-flow labels of " + data.principal + " · tenant " + data.tenant),
    el("p", { class: "muted" }, "What this principal's executions without an MCP session read; flow rules apply to its next executions until the labels expire or are cleared."),
    state.me.operator ? el("div", { class: "actions" }, lookup,
      el("button", { type: "button", id: "labels-show", onclick: () => { location.hash = "#/labels/" + encodeURIComponent(lookup.value.trim()); } }, "Show"),
      el("button", Object.assign({ type: "button", id: "labels-clear", class: "deny", onclick: clear }, data.labels.length === 0 ? { disabled: "disabled" } : {}), "Clear"), note) : el("span"),
    data.labels.length === 0 ? el("p", { id: "labels-none" }, "no labels") :
      el("table", { id: "labels-table" }, el("tr", {}, el("th", {}, "label"), el("th", {}, "read from"), el("th", {}, "by execution")), ...rows));
}

// ---- refused connections of confined servers ------------------------------------------------

// What this gateway's egress proxies refused (GET /ui/api/egress), newest first.
async function networkView(main) {
  const d = await api("/ui/api/egress?" + tenantParam());
  const key = "egress " + JSON.stringify(d);
  if (key === state.last) return;
  state.last = key;
  const rows = d.refused.map((c) => el("tr", {},
    el("td", {}, visible(c.at)), el("td", {}, visible(c.server)), el("td", {}, visible(c.tenant || "")),
    el("td", {}, visible(c.host + ":" + c.port)), el("td", {}, visible(c.address || "")), el("td", {}, visible(c.reason))));
  main.replaceChildren(el("h2", {}, "Refused connections" + (d.tenant ? " of tenant " + d.tenant : "")),
    el("p", { class: "muted" }, "Connections confined servers tried through their egress proxy and were refused (the last " + d.capacity + " since this gateway started)."),
    rows.length === 0 ? el("p", { class: "muted", id: "egress-none" }, "No refused connections.") :
      el("table", { id: "egress-table" }, el("tr", {}, el("th", {}, "time"), el("th", {}, "server"), el("th", {}, "tenant"), el("th", {}, "host:port"), el("th", {}, "address"), el("th", {}, "reason")), ...rows));
}

// ---- the frame --------------------------------------------------------------------------------

async function whoami() {
  const me = await api("/ui/api/me");
  state.me = me;
  document.getElementById("who").textContent = visible(me.principal + (me.operator ? " (operator)" : "") + " · tenant " + me.tenant);
  const sel = document.getElementById("tenant");
  const choices = me.operator ? ["*"].concat(me.tenants.includes(me.tenant) ? me.tenants : [me.tenant].concat(me.tenants)) : [me.tenant];
  sel.replaceChildren(...choices.map((t) => el("option", { value: t }, t === "*" ? "all tenants" : t)));
  state.tenant = me.operator ? "*" : me.tenant;
  sel.value = state.tenant;
  sel.disabled = !me.operator;
  sel.addEventListener("change", () => { state.tenant = sel.value; state.last = ""; refresh(); });
}

async function refresh() {
  if (state.busy) return;
  state.busy = true;
  const live = document.getElementById("live");
  try {
    if (!state.me) await whoami();
    const r = route();
    for (const id of ["executions", "graph", "capabilities", "labels", "network"]) document.getElementById("nav-" + id).classList.toggle("active", (r.view === "list" || r.view === "exec" ? "executions" : r.view) === id);
    const main = document.getElementById("view");
    // The graph and capabilities of "all tenants" are the viewer's own tenant's.
    const saved = state.tenant;
    if (r.view !== "list" && r.view !== "network" && state.tenant === "*") state.tenant = state.me.tenant;
    try {
      if (r.view === "exec") await execView(main, r.id);
      else if (r.view === "graph") await graphView(main);
      else if (r.view === "capabilities") await capabilitiesView(main);
      else if (r.view === "labels") await labelsView(main);
      else if (r.view === "network") await networkView(main);
      else await listView(main);
    } finally { state.tenant = saved; }
    await approvalsPanel();
    live.classList.remove("stale");
    live.textContent = "live";
    document.getElementById("status").textContent = "updated " + new Date().toLocaleTimeString(undefined, { hour12: false });
    document.body.dataset.ready = "1";
  } catch (e) {
    live.classList.add("stale");
    live.textContent = "offline";
    document.getElementById("status").textContent = String(e.message || e);
  } finally {
    state.busy = false;
  }
}

document.getElementById("token-save").addEventListener("click", () => {
  state.token = document.getElementById("token").value.trim();
  sessionStorage.setItem("mcp-sandbox-token", state.token);
  document.getElementById("login").hidden = true;
  state.me = null; state.last = ""; state.approvalsKey = "";
  refresh();
});
window.addEventListener("hashchange", () => { state.last = ""; refresh(); });
refresh();
setInterval(refresh, POLL_MS);
