// Brain's operator console: plain JavaScript, no build step, talks to this server only.
// The operator token is asked for once and kept in this tab's sessionStorage; every API call
// sends it as a bearer header. Live Events are read with fetch() and a streaming body reader,
// because EventSource cannot send an Authorization header.
"use strict";

const TOKEN_KEY = "brain.console.token";
const PAGE_SIZE = 20;
const STATUSES = ["creating", "idle", "running", "ending", "ended", "failed", "damaged"];
const main = document.getElementById("main");
const errorBox = document.getElementById("error");
let view = null; // the current view's cleanup (stops a live stream)

class ApiError extends Error {
  constructor(status, code, message, requestId) {
    super(message);
    this.status = status; this.code = code; this.requestId = requestId;
  }
  toString() {
    return `${this.code || "error " + this.status}: ${this.message}` +
      (this.requestId ? ` (request ${this.requestId})` : "");
  }
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "text") node.textContent = value;
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

function token() { return sessionStorage.getItem(TOKEN_KEY); }

function showError(err) {
  if (!err) { errorBox.hidden = true; errorBox.textContent = ""; return; }
  errorBox.textContent = String(err);
  errorBox.hidden = false;
}

async function errorOf(resp) {
  let body = null;
  try { body = await resp.json(); } catch (_) { /* not the contract's JSON */ }
  const e = body && body.error ? body.error : {};
  return new ApiError(resp.status, e.code || null, e.message || resp.statusText,
                      e.request_id || resp.headers.get("X-Request-Id"));
}

async function api(method, path, body, headers) {
  const init = { method, headers: { Authorization: `Bearer ${token()}`, ...(headers || {}) } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let resp;
  try { resp = await fetch(path, init); }
  catch (err) { throw new ApiError(0, "network", `Brain did not answer (${err.message})`); }
  if (resp.status === 401) { forgetToken((await errorOf(resp)).toString()); throw new ApiError(401, "unauthorized", "the token was refused"); }
  if (!resp.ok) throw await errorOf(resp);
  return resp.status === 204 ? null : resp.json();
}

function forgetToken(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  route(message);
}

function shortText(value, max = 160) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  if (text === undefined) return "";
  const flat = text.replace(/\s+/g, " ");
  return flat.length > max ? flat.slice(0, max - 1) + "…" : flat;
}

function contentText(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return shortText(content);
  return content.map((block) => {
    if (block && typeof block.text === "string") return block.text;
    if (block && (block.type === "tool_call" || block.type === "tool_use")) return `⚙ ${block.name} ${shortText(block.input)}`;
    if (block && block.type === "tool_result") return `→ ${shortText(block.content)}`;
    return shortText(block);
  }).join("\n");
}

function when(stamp) { return stamp ? new Date(stamp).toLocaleString() : "—"; }

function badge(status) { return el("span", { class: `badge ${status}`, text: status }); }

// --- the token -------------------------------------------------------------------------------

function tokenView(message) {
  const input = el("input", { type: "password", id: "token", autocomplete: "off",
                              placeholder: "operator token", class: "grow", required: true });
  const form = el("form", { class: "card stack", onsubmit: (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    location.hash = "#/";
    route();
  } },
  el("h1", { text: "Sign in" }),
  el("p", { class: "muted", text: "The operator token (brain-data/operator.token, or BRAIN_API_TOKEN). " +
                                   "It is kept for this tab only." }),
  el("div", { class: "row" }, input, el("button", { type: "submit", id: "save-token", text: "Open" })));
  if (message) showError(message);
  main.replaceChildren(form);
  input.focus();
}

// --- the session list -------------------------------------------------------------------------

async function listView(params) {
  const status = params.get("status") || "";
  const cursor = params.get("cursor") || "";
  const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
  if (status) query.set("status", status);
  if (cursor) query.set("cursor", cursor);
  const filter = el("select", { id: "status-filter", "aria-label": "status", onchange: () => {
    location.hash = filter.value ? `#/?status=${filter.value}` : "#/";
  } }, el("option", { value: "", text: "all statuses" }),
  STATUSES.map((s) => el("option", { value: s, text: s, selected: s === status })));
  const model = el("input", { id: "new-model", placeholder: "model (default)", size: 14 });
  const tools = el("input", { id: "new-tools", placeholder: "tools, comma-separated", size: 18 });
  const create = el("button", { id: "create", text: "New session", onclick: async () => {
    create.disabled = true;
    try {
      const body = {};
      if (model.value.trim()) body.model = model.value.trim();
      const names = tools.value.split(",").map((t) => t.trim()).filter(Boolean);
      if (names.length) body.tools = names;
      const session = await api("POST", "/v1/sessions", body);
      location.hash = `#/s/${session.id}`;
    } catch (err) { showError(err); } finally { create.disabled = false; }
  } });
  const tbody = el("tbody", { id: "sessions" });
  const pager = el("div", { class: "row" });
  main.replaceChildren(el("div", { class: "stack" },
    el("div", { class: "row" }, el("h1", { class: "grow", text: "Sessions" }), filter),
    el("div", { class: "card row" }, model, tools, create),
    el("div", { class: "card" },
      el("table", {}, el("thead", {}, el("tr", {}, el("th", { text: "session" }),
        el("th", { text: "status" }), el("th", { class: "hide-narrow", text: "updated" }),
        el("th", { text: "last seq" }))), tbody),
      pager)));
  const page = await api("GET", `/v1/sessions?${query}`);
  if (!page.sessions.length) {
    tbody.append(el("tr", {}, el("td", { colspan: 4, class: "muted", text: "No sessions." })));
  }
  for (const s of page.sessions) {
    tbody.append(el("tr", { "data-id": s.id },
      el("td", { class: "id" }, el("a", { href: `#/s/${s.id}`, text: s.id })),
      el("td", {}, badge(s.status)),
      el("td", { class: "hide-narrow muted", text: when(s.updated_at) }),
      el("td", { text: s.last_sequence ?? "—" })));
  }
  if (cursor) pager.append(el("a", { href: status ? `#/?status=${status}` : "#/", text: "« first page" }));
  pager.append(el("span", { class: "grow" }));
  if (page.next_cursor) {
    const next = new URLSearchParams({ cursor: page.next_cursor });
    if (status) next.set("status", status);
    pager.append(el("a", { id: "next-page", href: `#/?${next}`, text: "next page »" }));
  }
}

// --- one session ------------------------------------------------------------------------------

function sessionView(id) {
  const state = { session: null, lastSeq: 0, stopped: false, controller: null, pending: null,
                  damageAsked: false, openTurn: null };
  const title = el("h1", { class: "grow mono", text: id });
  const status = el("span", { id: "session-status" });
  const live = el("span", { class: "live off", id: "live", text: "live" });
  // A damaged session: where its journal is refused (the Session's `damage`, in the words of
  // `brain journal verify`), the last session_damaged error a read answered, and what next.
  const damage = el("dl", { id: "damage", class: "damage", hidden: true });
  const damageError = el("p", { id: "damage-error", hidden: true });
  const damaged = el("div", { class: "error", id: "damaged", role: "alert", hidden: true },
    el("strong", { text: "This session is damaged: its journal is refused, so it takes no message." }),
    damage, damageError,
    el("p", { class: "hint", text: `Next: brain journal verify ${id} on the server, then restore ` +
      "its journal from a backup, or keep what verifies and delete it (docs/operations.md, " +
      "\"Recovering a damaged session\")." }));
  const transcript = el("div", { id: "transcript", class: "scroll" });
  const pending = el("div", { id: "pending", class: "msg pending", hidden: true });
  const events = el("div", { id: "events", class: "events" });
  const text = el("textarea", { id: "message", placeholder: "Message" });
  const mode = el("select", { id: "mode", "aria-label": "mode" },
    el("option", { value: "send", text: "send (wait for the answer)" }),
    el("option", { value: "submit", text: "submit (answer arrives in Events)" }));
  const result = el("span", { id: "turn-result", class: "muted grow" });
  // Each write to the result line counts, so a cancel acknowledged after the held send's own
  // answer arrived (the turn failed with "cancelled" first) never replaces that answer.
  let resultWrites = 0;
  const showResult = (line) => { resultWrites += 1; result.textContent = line; };
  const sendButton = el("button", { id: "send", text: "Send" });
  const act = (label, idName, cls, question, run) => el("button", { id: idName, class: cls, text: label,
    onclick: async () => {
      if (!confirm(question)) return;
      try { showError(null); await run(); } catch (err) { showError(err); }
    } });
  const base = `/v1/sessions/${encodeURIComponent(id)}`;

  async function refresh() {
    try {
      state.session = await api("GET", base);
      status.replaceChildren(badge(state.session.status));
      enableFor(state.session.status);
      if (state.session.status === "damaged") showDamaged(null, state.session.damage);
    } catch (err) { if (err.code === "session_damaged") showDamaged(err); else throw err; }
  }
  // What each status allows: no message or interrupt once a session is over or damaged.
  function enableFor(current) {
    const over = ["ended", "failed", "damaged"].includes(current);
    for (const node of [sendButton, text, mode]) node.disabled = over;
    document.getElementById("interrupt").disabled = over;
    document.getElementById("end").disabled = over || current === "ending";
  }
  function showDamaged(err, where) {
    status.replaceChildren(badge("damaged"));
    enableFor("damaged");
    damaged.hidden = false;
    if (where) {
      const rows = [["segment", where.segment], ["byte offset", where.offset],
                    ["sequence", where.sequence ?? "unknown"], ["reason", where.reason]];
      damage.replaceChildren(...rows.flatMap(([name, value]) =>
        [el("dt", { text: name }), el("dd", { class: "mono", text: String(value) })]));
      damage.hidden = false;
    } else if (damage.hidden && !state.damageAsked) {
      state.damageAsked = true; // a read found it first: the Session says where it is
      refresh().catch(showError);
    }
    if (err) { damageError.textContent = String(err); damageError.hidden = false; }
  }
  async function loadTranscript() {
    try {
      const t = await api("GET", `${base}/transcript`);
      transcript.replaceChildren(...t.messages.map((m) => el("div", { class: `msg ${m.role}` },
        el("span", { class: "role", text: m.role }), contentText(m.content))));
      if (!t.messages.length) transcript.append(el("p", { class: "muted", text: "No messages yet." }));
    } catch (err) { if (err.code === "session_damaged") showDamaged(err); else showError(err); }
  }
  function addEvent(ev) {
    state.lastSeq = Math.max(state.lastSeq, ev.sequence);
    const origin = ev.origin ? el("span", { class: "origin", text: `from ${ev.origin.kind} #${ev.origin.sequence}` }) : null;
    const d = ev.data || {};
    let detail = "";
    if (ev.origin) detail = shortText(d); // an extension Event: its kind is its own name
    else if (ev.kind === "tool_call_started") detail = `${d.tool} ${shortText(d.invocation && d.invocation.input)}`;
    else if (ev.kind === "turn_started") detail = shortText(d.input);
    else if (ev.kind === "turn_ended") detail = shortText(d.output);
    else if (d.error) detail = `${d.error.code}: ${d.error.message || ""}`;
    else if (ev.kind === "model_call_ended" && d.result && d.result.message) detail = shortText(contentText(d.result.message.content));
    else if (d.result !== undefined) detail = shortText(d.result && d.result.content !== undefined ? d.result.content : d.result);
    else if (ev.kind === "model_call_started") detail = d.model || "";
    else if (ev.kind === "forked_from") detail = `from ${d.session_id} #${d.sequence}`;
    // A fork may start at any record outside a turn (from turn_started to the record ending it).
    if (ev.kind === "turn_started") state.openTurn = ev.sequence;
    else if (ev.kind === "turn_ended" || ev.kind === "turn_failed") state.openTurn = null;
    const fork = state.openTurn === null ? el("button", { class: "quiet fork", text: "Fork here",
      "data-fork": ev.sequence, onclick: () => forkAt(ev.sequence) }) : null;
    const replay = ["turn_ended", "turn_failed"].includes(ev.kind) ? replayPanel(d.started) : null;
    const failed = /_failed$/.test(ev.kind) || ev.kind === "cancel_requested";
    const row = el("details", { class: `event${failed ? " failed" : ""}${ev.origin ? " extension" : ""}`, "data-seq": ev.sequence, "data-kind": ev.kind },
      el("summary", {}, el("span", { class: "seq mono", text: `#${ev.sequence}` }),
        el("span", { class: "kind", text: ev.kind }), origin,
        detail ? el("span", { class: "detail", text: detail }) : null),
      ev.kind === "forked_from" ? el("a", { class: "parent", href: `#/s/${encodeURIComponent(d.session_id)}`,
                                            text: "open the session it was forked from" }) : null,
      fork, replay, el("pre", { text: JSON.stringify(ev, null, 2) }));
    const atBottom = events.scrollTop + events.clientHeight >= events.scrollHeight - 20;
    events.append(row);
    if (atBottom) events.scrollTop = events.scrollHeight;
    if (ev.kind === "model_call_started") { pending.textContent = ""; pending.hidden = true; }
    if (["turn_ended", "turn_failed", "transcript_changed"].includes(ev.kind)) {
      pending.hidden = true; pending.textContent = "";
      loadTranscript();
    }
    if (/^(turn_|session_|cancel_)/.test(ev.kind)) refresh().catch(showError);
  }
  // A new session from this one's state at `sequence`; its page opens once it exists.
  async function forkAt(sequence) {
    if (!confirm(`Fork this session at #${sequence}? A new session starts from its ` +
                 "transcript and kv as they stood there; this one is not changed.")) return;
    try {
      showError(null);
      const child = await api("POST", `${base}/forks`, { at_sequence: sequence });
      location.hash = `#/s/${child.id}`;
    } catch (err) { showError(err); }
  }
  // Replays the finished turn `turn` offline with a configured Agentloop (blank: the
  // session's own) and shows the report as `brain replay` prints it (docs/replay.md).
  function replayPanel(turn) {
    const name = el("input", { class: "replay-agentloop", "aria-label": "Agentloop to replay with",
                               placeholder: "Agentloop name (blank: the session's own)" });
    const report = el("pre", { class: "replay-report", hidden: true });
    const button = el("button", { class: "quiet replay", text: "Replay this turn", "data-turn": turn,
      onclick: async () => {
        button.disabled = true; showError(null);
        report.hidden = false; report.className = "replay-report"; report.textContent = "replaying…";
        try {
          const body = name.value.trim() ? { turn, agentloop: name.value.trim() } : { turn };
          const answer = await api("POST", `${base}/replays`, body);
          report.className = `replay-report ${answer.verdict}`;
          report.textContent = reportText(answer);
          report.scrollIntoView({ block: "nearest" });
        } catch (err) { report.hidden = true; showError(err); }
        finally { button.disabled = false; }
      } });
    return el("div", { class: "replay-panel" }, el("div", { class: "row" }, name, button), report);
  }
  function addDelta(delta) {
    pending.hidden = false;
    pending.textContent += delta.delta;
  }

  async function follow() {
    let backoff = 500;
    while (!state.stopped) {
      state.controller = new AbortController();
      try {
        await streamEvents(`${base}/events`, state.lastSeq, addEvent, addDelta, state.controller.signal,
                           () => { live.className = "live on"; backoff = 500; });
      } catch (err) {
        if (state.stopped || err.name === "AbortError") return;
        if (err.code === "session_damaged") { showDamaged(err); break; }
        if (err.status === 404 || err.status === 401) { showError(err); break; }
      }
      live.className = "live off";
      if (state.session && ["ended", "failed", "damaged"].includes(state.session.status)) break;
      await new Promise((r) => setTimeout(r, backoff));
      backoff = Math.min(backoff * 2, 5000);
    }
    live.className = "live off";
  }

  sendButton.addEventListener("click", async () => {
    const input = text.value.trim();
    if (!input) return;
    sendButton.disabled = true; showError(null);
    showResult(mode.value === "send" ? "waiting for the answer…" : "submitting…");
    try {
      const headers = mode.value === "submit" ? { Prefer: "respond-async" } : {};
      const answer = await api("POST", `${base}/messages`, { input }, headers);
      text.value = "";
      showResult(mode.value === "submit" ? `turn #${answer.sequence} submitted`
        : `turn #${answer.sequence} ${answer.status}` + (answer.error ? ` (${answer.error.code})` : ""));
    } catch (err) { showResult(""); showError(err); }
    finally { sendButton.disabled = false; }
  });

  main.replaceChildren(el("div", { class: "stack" },
    el("div", { class: "row" }, el("a", { href: "#/", text: "← sessions" })),
    el("div", { class: "row" }, title, status, live),
    damaged,
    el("div", { class: "actions" },
      act("Interrupt", "interrupt", "quiet", "Interrupt the turn in flight?", async () => {
        const before = resultWrites;
        const answer = await api("POST", `${base}/cancel`, {});
        if (resultWrites !== before) return;  // the send's answer came first and says more
        showResult(answer.sequence ? `cancel requested (#${answer.sequence})` : "nothing was running");
      }),
      act("End", "end", "quiet", "End this session? It will take no more messages.", async () => {
        await api("POST", `${base}/end`, {}); await refresh();
      }),
      act("Delete", "delete", "danger", "Delete this session and its journal? This cannot be undone.", async () => {
        await api("DELETE", base); location.hash = "#/";
      })),
    el("div", { class: "split" },
      el("section", { class: "card composer" }, el("h2", { text: "Transcript" }), transcript, pending,
        text, el("div", { class: "row" }, mode, result, sendButton)),
      el("section", { class: "card" }, el("h2", { text: "Events" }), events))));

  refresh().then(loadTranscript).then(follow).catch(showError);
  return () => { state.stopped = true; if (state.controller) state.controller.abort(); };
}

// A replay report as lines: one per guest call, both sides of a divergence, then the verdict.
function reportText(r) {
  const lines = [`turn #${r.turn} replayed with ${r.agentloop.path}` +
                 (r.same_module ? " (the session's own module)" : "")];
  for (const s of r.steps) {
    const seqs = s.sequences.length ? `  #${s.sequences.join(", #")}` : "";
    lines.push(`${s.call}. ${s.op} ${s.status}${seqs}`);
    if (s.status === "diverged") {
      lines.push(`   ${s.message}`, `   journal: ${shortText(s.journaled, 300)}`,
                 `   asked:   ${shortText(s.asked, 300)}`);
    }
  }
  const at = r.divergence && (r.divergence.op === "return" ? "its return"
    : `guest call ${r.divergence.call} (${r.divergence.op})`);
  lines.push(r.verdict === "match" ? "no divergence: every call and the return agree with the journal"
    : `diverged at ${at}, after ${r.matched_records} of ${r.journaled_records} records`);
  return lines.join("\n");
}

// Reads an event stream with fetch(): committed Events (id, event, data) and model_delta frames.
async function streamEvents(path, after, onEvent, onDelta, signal, onOpen) {
  const resp = await fetch(`${path}?after=${after}`, { signal, headers: {
    Authorization: `Bearer ${token()}`, Accept: "text/event-stream" } });
  if (!resp.ok) throw await errorOf(resp);
  onOpen();
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer = (buffer + value).replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let kind = "message"; const data = [];
      for (const line of frame.split("\n")) {
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const val = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") kind = val;
        else if (field === "data") data.push(val);
      }
      if (!data.length) continue;
      const body = JSON.parse(data.join("\n"));
      if (kind === "model_delta") onDelta(body);
      else if (kind === "error") {
        const e = body.error || {};
        throw new ApiError(500, e.code, e.message, e.request_id);
      } else onEvent(body);
    }
  }
}

// --- routing ----------------------------------------------------------------------------------

function route(message) {
  if (view) { view(); view = null; }
  showError(message || null);
  document.getElementById("forget").hidden = !token();
  if (!token()) { tokenView(message); return; }
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, query] = hash.split("?");
  const match = path.match(/^\/s\/([A-Za-z0-9_-]{1,64})$/);
  if (match) view = sessionView(match[1]);
  else listView(new URLSearchParams(query || "")).catch(showError);
}

document.getElementById("forget").addEventListener("click", () => forgetToken());
window.addEventListener("hashchange", () => route());
route();
