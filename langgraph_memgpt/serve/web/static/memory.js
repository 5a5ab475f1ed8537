// The memory page: reads /memory/api/... and draws it. Plain DOM, no framework, no build.
// Text from memory is only ever set with textContent (never as HTML).
"use strict";

const API = "/memory/api";
const state = { agent: null, view: "core", recallPage: 0, archivalPage: 0 };

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "text") node.textContent = value;
    else if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

function showError(message) {
  const box = document.getElementById("error");
  box.textContent = message || "";
  box.hidden = !message;
}

async function api(path, params = {}, options = {}) {
  const url = new URL(API + path, location.origin);
  for (const [key, value] of Object.entries(params)) {
    if (value !== "" && value !== null && value !== undefined) url.searchParams.set(key, value);
  }
  const headers = { "Content-Type": "application/json" };
  const token = sessionStorage.getItem("memgpt-token");
  if (token) headers.Authorization = "Bearer " + token;
  const response = await fetch(url, { ...options, headers });
  const body = await response.json().catch(() => ({}));
  if (response.status === 401) {
    document.getElementById("login").hidden = false;
  }
  if (!response.ok) {
    const err = new Error(body.detail || `${response.status} ${response.statusText}`);
    err.status = response.status;
    err.body = body;
    throw err;
  }
  return body;
}

function bar(fill, extraClass = "", marks = []) {
  const span = el("span");
  span.style.width = Math.min(100, Math.round(fill * 1000) / 10) + "%";
  const node = el("div", { class: "bar " + extraClass + (fill >= 1 ? " full" : "") }, span);
  for (const at of marks) {
    const mark = el("i", { class: "mark" });
    mark.style.left = Math.min(100, at * 100) + "%";
    node.append(mark);
  }
  return node;
}

function when(iso) {
  return iso ? iso.replace("T", " ").slice(0, 19) : "";
}

// --- core ---------------------------------------------------------------------------------

async function loadCore() {
  const data = await api("/core", { agent: state.agent });
  const box = document.getElementById("blocks");
  box.replaceChildren();
  for (const block of data.blocks) box.append(blockCard(block));
}

function blockCard(block) {
  const area = el("textarea", {
    "data-testid": "block-value", readonly: block.read_only, "aria-label": block.label,
  });
  area.value = block.value;
  const card = el("article", { class: "block", "data-label": block.label, "data-testid": "block" },
    el("h3", {},
      el("span", { text: block.label }),
      block.read_only ? el("span", { class: "badge ro", text: "read-only" }) : null,
      el("span", { class: "muted", "data-testid": "fill",
                   text: `${block.chars} / ${block.char_limit} chars` })),
    el("div", { class: "muted", text: block.description }),
    bar(block.fill),
    sectionList(block),
    area);
  const actions = el("div", {});
  if (block.read_only) {
    card.append(el("p", { class: "why", "data-testid": "read-only-why",
      text: "Read-only: the agent reads this block but nobody changes it from this page; " +
            "its owner sets it outside the page." }));
  } else {
    const note = el("span", { class: "muted", "data-testid": "save-note" });
    actions.append(el("button", { "data-testid": "save", text: "Save",
      onclick: async () => {
        note.textContent = "";
        try {
          // Compare-and-set: the store writes only if the block still holds what we loaded.
          await api("/core", { agent: state.agent, label: block.label },
                    { method: "PUT",
                      body: JSON.stringify({ value: area.value, expected: block.value }) });
          await loadCore();
          await showHistory(block.label);
        } catch (err) {
          if (err.status === 409) {
            // Keep the person's text in the box; show what the block holds now. What the
            // save compares against stays the text the page loaded: a second click is
            // refused again, never a save of the stale text over the agent's edit.
            note.setAttribute("data-conflict", "");
            note.textContent = "Not saved: this block changed since the page loaded it " +
              "(now: \u201c" + err.body.current.value + "\u201d). Your text is still in the " +
              "box; reload the block to see the change, then edit again.";
          } else note.textContent = err.message;
        }
      } }), " ", note);
  }
  actions.append(" ", el("button", { "data-testid": "show-history", text: "History",
                                     onclick: () => showHistory(block.label).catch(fail) }));
  card.append(actions);
  return card;
}

// A block in labelled sections: each section's name over its text (the textarea below
// edits the whole value, headers included).
function sectionList(block) {
  if (!block.sections || !block.sections.length) return null;
  const list = el("dl", { class: "sections", "data-testid": "sections" });
  for (const part of block.sections) {
    list.append(el("dt", { "data-testid": "section-name", text: part.name || "(before the sections)" }),
                el("dd", { "data-testid": "section-text", text: part.text || "(empty)" }));
  }
  return list;
}

async function showHistory(label, page = 0) {
  const data = await api("/history", { agent: state.agent, label, page });
  document.getElementById("history").hidden = false;
  document.getElementById("history-label").textContent = label;
  const list = document.getElementById("edits");
  list.replaceChildren();
  for (const edit of data.edits) {
    const diff = el("p", { class: "diff", "data-testid": "diff" });
    for (const [op, text] of edit.diff) {
      diff.append(op === "+" ? el("ins", { text }) : op === "-" ? el("del", { text })
                             : document.createTextNode(text));
    }
    list.append(el("li", { "data-testid": "edit" },
      el("div", { class: "meta" },
        el("span", { text: edit.op }),
        el("span", { "data-testid": "actor", text: "by " + edit.actor }),
        edit.thread_id ? el("span", { "data-testid": "edit-thread",
                                      text: "thread " + edit.thread_id }) : null,
        el("time", { text: when(edit.time) })),
      diff));
  }
  pager(document.getElementById("history-pager"), data,
        (p) => showHistory(label, p).catch(fail));
}

// --- recall and archival ------------------------------------------------------------------

function pager(box, data, go) {
  box.replaceChildren();
  if (data.pages <= 1) return;
  box.append(el("button", { text: "‹ newer", disabled: data.page === 0,
                            onclick: () => go(data.page - 1) }),
             el("span", { class: "muted", text: ` page ${data.page + 1} of ${data.pages} ` }),
             el("button", { text: "older ›", disabled: data.page + 1 >= data.pages,
                            onclick: () => go(data.page + 1) }));
}

function formParams(form) {
  const data = new FormData(form);
  const params = {};
  for (const [key, value] of data.entries()) {
    params[key] = params[key] ? params[key] + "," + value : value;
  }
  return params;
}

async function loadRecall(page = 0) {
  state.recallPage = page;
  const params = formParams(document.getElementById("recall-form"));
  const data = await api("/recall", { agent: state.agent, page, ...params });
  document.getElementById("recall-count").textContent = data.mode === "search"
    ? `${data.total} matches for “${data.query}”` : `${data.total} messages, newest first`;
  const list = document.getElementById("messages");
  list.replaceChildren();
  for (const m of data.messages) {
    const calls = m.tool_calls.map((c) => {
      const args = { ...c.args };
      delete args.request_heartbeat;
      return `${m.text ? "\n" : ""}→ ${c.name}(${JSON.stringify(args)})`;
    }).join("\n");
    list.append(el("li", { "data-testid": "message" },
      el("div", { class: "meta" },
        el("span", { class: "role role-" + m.role, text: m.role + (m.name ? ` (${m.name})` : "") }),
        el("time", { text: when(m.time) }),
        el("span", { text: `thread ${m.thread_id} · turn ${m.turn}` }),
        m.score !== null ? el("span", { text: "score " + m.score.toFixed(3) }) : null),
      el("p", { class: "text", text: m.text + calls })));
  }
  pager(document.getElementById("recall-pager"), data, (p) => loadRecall(p).catch(fail));
}

async function loadArchival(page = 0) {
  state.archivalPage = page;
  const params = formParams(document.getElementById("archival-form"));
  const data = await api("/archival", { agent: state.agent, page, ...params });
  document.getElementById("archival-count").textContent = `${data.total} passages`;
  const retention = document.getElementById("retention");
  retention.hidden = !data.retention.length;
  retention.textContent = "Retention: " + data.retention.map((r) =>
    `passages tagged ${r.tag}` + (r.source ? ` from ${r.source}` : "") +
    ` are forgotten after ${r.max_age}`).join("; ");
  const tags = document.getElementById("tags-in-use");
  tags.replaceChildren(...data.tags_in_use.map((t) => el("option", { value: t })));
  const list = document.getElementById("passages");
  list.replaceChildren();
  for (const p of data.passages) {
    const where = p.thread_id ? `from thread ${p.thread_id}` + (p.turn ? `, turn ${p.turn}` : "")
                              : "no thread";
    list.append(el("li", { "data-testid": "passage" },
      el("div", { class: "meta" },
        el("span", { text: "#" + p.id }),
        el("time", { text: when(p.time) }),
        el("span", { "data-testid": "provenance", text: where }),
        ...p.tags.map((t) => el("span", { class: "tag", text: t })),
        p.score !== null ? el("span", { text: "score " + p.score.toFixed(3) }) : null,
        el("button", { "data-testid": "forget", onclick: () => forgetPassage(p.id) }, "Forget")),
      el("p", { class: "text", text: p.text })));
  }
  pager(document.getElementById("archival-pager"), data, (n) => loadArchival(n).catch(fail));
}

async function forgetPassage(id) {
  if (!confirm(`Forget passage #${id} everywhere it lives? This cannot be undone.`)) return;
  try {
    await api("/archival", { agent: state.agent, id }, { method: "DELETE" });
    await loadArchival(state.archivalPage);
  } catch (err) { fail(err); }
}

// --- threads ------------------------------------------------------------------------------

async function loadThreads() {
  const data = await api("/threads", { agent: state.agent });
  const box = document.getElementById("threads");
  box.replaceChildren();
  if (!data.threads.length) box.append(el("p", { class: "muted", text: "No threads yet." }));
  for (const t of data.threads) {
    if (t.error) {
      box.append(el("article", { class: "thread", "data-testid": "thread",
                                 "data-thread": t.thread_id },
        el("h3", {}, el("span", { text: "thread " + t.thread_id })),
        el("p", { class: "why", "data-testid": "thread-error",
                  text: "This thread cannot be shown: " + t.error })));
      continue;
    }
    const g = t.gauge;
    const level = g.tokens >= g.warning_at ? " warn" : "";
    const gauge = bar(g.fill, "gauge" + level, [g.warning_at / g.window, g.flush_at / g.window]);
    gauge.setAttribute("data-testid", "gauge");
    gauge.setAttribute("role", "meter");
    gauge.setAttribute("aria-valuenow", g.tokens);
    gauge.setAttribute("aria-valuemax", g.window);
    const evictions = el("ol", { class: "edits" });
    for (const e of t.evictions) {
      evictions.append(el("li", { "data-testid": "eviction" },
        el("div", { class: "meta" }, el("time", { text: when(e.time) }),
           el("span", { text: e.turn ? `turn ${e.turn}` : "" })),
        el("p", { class: "text", text: e.text })));
    }
    box.append(el("article", { class: "thread", "data-testid": "thread",
                               "data-thread": t.thread_id },
      el("h3", {}, el("span", { text: "thread " + t.thread_id }),
         el("span", { class: "muted", text: `turn ${t.turn} · updated ${when(t.updated_at)}` })),
      el("div", { "data-testid": "gauge-text",
                  text: `${g.tokens} / ${g.window} tokens in the next prompt ` +
                        `(${g.queue_messages} queued messages; warning at ${g.warning_at}, ` +
                        `eviction at ${g.flush_at})` }),
      gauge,
      el("h4", { text: `Summary (${t.evicted_count} messages evicted)` }),
      el("p", { class: "summary", "data-testid": "summary", text: t.summary || "none yet" }),
      el("h4", { text: `Evictions (${t.evictions.length})` }),
      evictions));
  }
}

// --- wiring -------------------------------------------------------------------------------

const loaders = { core: loadCore, recall: () => loadRecall(0),
                  archival: () => loadArchival(0), threads: loadThreads };

function fail(err) { showError(err.message); }

async function show(view) {
  state.view = view;
  for (const button of document.querySelectorAll("#tabs button")) {
    button.classList.toggle("active", button.dataset.view === view);
  }
  for (const section of document.querySelectorAll(".view")) {
    section.hidden = section.id !== "view-" + view;
  }
  document.getElementById("history").hidden = true;
  showError("");
  if (state.agent) await loaders[view]();
  document.body.dataset.loaded = view;
}

async function start() {
  const data = await api("/agents");
  document.getElementById("login").hidden = true;
  document.getElementById("who").textContent = data.user ? `signed in as ${data.user}` : "";
  const picker = document.getElementById("agent");
  picker.replaceChildren(...data.agents.map((a) => el("option", { value: a, text: a })));
  const wanted = new URLSearchParams(location.search).get("agent");
  state.agent = data.agents.includes(wanted) ? wanted : data.agents[0] || null;
  if (state.agent) picker.value = state.agent;
  else showError("No agent has memory on this server yet: talk to one first.");
  await show(state.view);
}

document.getElementById("agent").addEventListener("change", (event) => {
  state.agent = event.target.value;
  show(state.view).catch(fail);
});
for (const button of document.querySelectorAll("#tabs button")) {
  button.addEventListener("click", () => show(button.dataset.view).catch(fail));
}
document.getElementById("recall-form").addEventListener("submit", (event) => {
  event.preventDefault();
  loadRecall(0).then(() => { document.body.dataset.loaded = "recall-search"; }).catch(fail);
});
document.getElementById("archival-form").addEventListener("submit", (event) => {
  event.preventDefault();
  loadArchival(0).then(() => { document.body.dataset.loaded = "archival-search"; }).catch(fail);
});
document.getElementById("login-form").addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem("memgpt-token", document.getElementById("token").value);
  start().catch(fail);
});
start().catch(fail);
