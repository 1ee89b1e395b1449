/* masgrid report site: our own code, no external resources. Data arrive as scripts calling
   masgridData(key, value) (masgrid/_private/site/jsdata.py) so the pages also work from file://. */
"use strict";

const stored = {};
const waiting = {};

function masgridData(key, value) {
  if (waiting[key]) { const resolve = waiting[key]; delete waiting[key]; resolve(value); }
  else { stored[key] = value; }
}

function load(src, key) {
  if (key in stored) return Promise.resolve(stored[key]);
  return new Promise((resolve, reject) => {
    waiting[key] = resolve;
    const tag = document.createElement("script");
    tag.src = src;
    tag.onerror = () => { delete waiting[key]; reject(new Error("could not load " + src)); };
    document.head.appendChild(tag);
  });
}

/* el("div", {class: "x"}, "text", child): text is always set as text, never parsed as HTML */
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "onclick" || k === "ontoggle" || k === "onchange") node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    node.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
  }
  return node;
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

function fmt(v) {
  if (v === null || v === undefined) return "";
  if (typeof v === "number") {
    if (Number.isInteger(v)) return String(v);
    return Math.abs(v) >= 100 ? v.toFixed(1) : v.toPrecision(3);
  }
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (Array.isArray(v)) return v.join(", ");
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

function showError(err) {
  document.body.insertBefore(el("p", {class: "flag", id: "error"}, String(err.message || err)), document.body.firstChild);
}

function kvTable(table, obj) {
  table.replaceChildren(...Object.entries(obj).map(([k, v]) => el("tr", {}, el("td", {}, k), el("td", {}, fmt(v)))));
}

/* ---------------------------------------------------------------- index page */

const INDEX_COLUMNS = [
  ["run_id", "run"], ["experiment", "experiment"], ["tags", "tags"], ["family", "family"], ["task", "task"],
  ["protocol", "protocol"], ["agents", "N"], ["k", "K"], ["model", "model"], ["condition", "condition"],
  ["seed", "seed"], ["status", "status"], ["score", "score"], ["sr", "SR"], ["success", "success"],
  ["rounds", "R"], ["tokens_total", "tokens"], ["wall_s", "wall (s)"], ["model_error_rate", "model error rate"],
];
const COLUMN_HELP = {
  score: "each run's family's headline metric (Family.site_score): point at a value for its name",
  sr: "success rate: fraction of agents whose answer is correct (0-1)", rounds: "R: max model calls of an agent",
  tokens_total: "prompt + completion tokens of all calls", model_error_rate: "failed model calls / calls",
};

function indexPage() {
  load("data/index.js", "index").then(renderIndex).catch(showError);
}

/* files set aside as damaged (results_dir/quarantine/log.jsonl): their runs are missing from
   the table below unless recorded again since */
function renderQuarantine(entries) {
  const box = document.getElementById("quarantine");
  if (!entries.length) return;
  box.hidden = false;
  box.appendChild(el("summary", {}, `Damaged files set aside (${entries.length})`));
  const rows = entries.map((d) => el("tr", {},
    el("td", {}, d.time || ""), el("td", {}, d.table), el("td", {}, d.path), el("td", {}, d.error),
    el("td", {}, d.lost), el("td", {}, d.run_id ? (d.recorded_again ? "recorded again" : "not recorded") : "")));
  const head = el("tr", {}, ...["moved at", "table", "file", "reason", "lost", "run now"].map((h) => el("th", {}, h)));
  box.appendChild(el("table", {class: "grid"}, el("thead", {}, head), el("tbody", {}, ...rows)));
}

function renderIndex(data) {
  const status = Object.entries(data.status).map(([s, n]) => `${n} ${s}`).join(", ");
  document.getElementById("summary").textContent =
    `${data.runs.length} runs (${status}) from ${data.results_dir}; families: ${data.families.join(", ") || "none"}` +
    (data.damaged.length ? `; ${data.damaged.length} damaged files set aside (listed below the links)` : "");
  const reports = document.getElementById("reports");
  for (const [label, href] of Object.entries(data.reports)) reports.appendChild(el("a", {href}, label));
  renderQuarantine(data.damaged);
  const select = document.getElementById("status-filter");
  for (const s of Object.keys(data.status).sort()) select.appendChild(el("option", {value: s}, s));
  const table = document.getElementById("runs");
  const headRow = el("tr", {});
  const state = {key: null, dir: 1};
  for (const [key, label] of INDEX_COLUMNS) {
    headRow.appendChild(el("th", {"data-key": key, title: COLUMN_HELP[key] || null, onclick: () => {
      state.dir = state.key === key ? -state.dir : 1;
      state.key = key;
      for (const th of headRow.children) th.className = th.dataset.key === key ? (state.dir > 0 ? "asc" : "desc") : "";
      draw();
    }}, label));
  }
  table.tHead.appendChild(headRow);
  const rows = data.runs.map((run) => ({run, text: INDEX_COLUMNS.map(([k]) => fmt(run[k])).join(" ").toLowerCase() +
                                             " " + (run.status_note || "").toLowerCase(), node: rowNode(run)}));
  const filter = document.getElementById("filter");
  function draw() {
    const terms = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
    const wanted = select.value;
    let shown = rows.filter((r) => terms.every((t) => r.text.includes(t)) && (!wanted || r.run.status === wanted));
    if (state.key) shown = shown.slice().sort((a, b) => compare(a.run[state.key], b.run[state.key]) * state.dir);
    table.tBodies[0].replaceChildren(...shown.map((r) => r.node));
    document.getElementById("shown").textContent = `${shown.length} of ${rows.length} runs shown`;
  }
  filter.addEventListener("input", draw);
  select.addEventListener("change", draw);
  draw();
}

function compare(a, b) {
  const missing = (v) => v === null || v === undefined;
  if (missing(a) || missing(b)) return missing(a) - missing(b);  // missing values last
  if (typeof a === "number" && typeof b === "number") return a - b;
  return fmt(a).localeCompare(fmt(b), undefined, {numeric: true});
}

function rowNode(run) {
  const tr = el("tr", {"data-run": run.run_id, "data-status": run.status});
  for (const [key] of INDEX_COLUMNS) {
    const v = run[key];
    let cell;
    if (key === "run_id") cell = el("td", {}, el("a", {href: "run.html#" + encodeURIComponent(v)}, v));
    else if (key === "status") cell = el("td", {title: run.status_note},
                                         el("span", {class: "badge status-" + v}, v));
    else if (key === "score") cell = el("td", {class: "num", title: run.score_name}, fmt(v));
    else cell = el("td", {class: typeof v === "number" ? "num" : null}, fmt(v));
    tr.appendChild(cell);
  }
  return tr;
}

/* ---------------------------------------------------------------- run page */

function runPage() {
  const id = decodeURIComponent(location.hash.slice(1));
  if (!/^[0-9a-zA-Z_-]+$/.test(id)) { showError(new Error("no run id in the address (run.html#RUN_ID)")); return; }
  const base = `data/runs/${id}/`;
  load(base + "header.js", `run:${id}:header`).then((header) => {
    renderHeader(header);
    const later = [load(base + "flows.js", `run:${id}:flows`).then((f) => renderFlows(f, header))];
    if (header.family_panel) later.push(load(base + "family.js", `run:${id}:family`).then(renderFamily));
    setupTranscripts(header, base, id);
    return Promise.all(later);
  }).then(() => { document.body.dataset.ready = "1"; }).catch(showError);
  window.addEventListener("hashchange", () => location.reload());
}

function renderHeader(h) {
  document.title = `masgrid run ${h.run_id}`;
  const s = h.setting;
  document.getElementById("title").textContent = `${s.task} · ${s.protocol} · N=${s.agents} · seed ${s.seed} · ${h.run_id}`;
  document.getElementById("status").replaceChildren(el("span", {class: "badge status-" + h.status}, h.status_note));
  kvTable(document.getElementById("setting"), s);
  kvTable(document.getElementById("provenance"), h.provenance);
  document.getElementById("config").textContent = JSON.stringify(h.config, null, 2);
  const metrics = document.getElementById("metrics");
  metrics.replaceChildren(el("tr", {}, el("th", {}, "metric"), el("th", {}, "value"), el("th", {}, "unit")),
    ...h.metrics.map((m) => el("tr", {title: m.meaning}, el("td", {}, m.name), el("td", {class: "num"}, fmt(m.value)),
                                 el("td", {}, m.unit))));
  const a = h.agents;
  const agents = document.getElementById("agents");
  agents.replaceChildren(el("tr", {}, ...a.columns.map((c) => el("th", {title: a.units[c]}, c))),
    ...a.rows.map((r) => el("tr", {}, ...r.map((v) => el("td", {class: typeof v === "number" ? "num" : null}, fmt(v))))));
}

function renderFlows(f, header) {
  const n = f.heatmap.length;
  const cell = Math.max(4, Math.min(28, Math.floor(560 / Math.max(n, 1))));
  const pad = 40;
  const size = pad + n * cell + 10;
  const box = svg("svg", {id: "heatmap-svg", width: size + 120, height: size + 20, role: "img",
                          "aria-label": "sender x receiver heatmap"});
  let max = 0;
  for (const row of f.heatmap) for (const v of row) max = Math.max(max, v);
  box.appendChild(svg("rect", {x: pad, y: pad, width: n * cell, height: n * cell, fill: "#fff", stroke: "#999"}));
  const step = n <= 30 ? 1 : 10;
  for (let i = 0; i < n; i += step) {
    box.appendChild(svg("text", {x: pad - 4, y: pad + i * cell + cell / 2 + 3, "text-anchor": "end"}, String(i)));
    box.appendChild(svg("text", {x: pad + i * cell + cell / 2, y: pad - 4, "text-anchor": "middle"}, String(i)));
  }
  box.appendChild(svg("text", {x: pad + n * cell / 2, y: 12, "text-anchor": "middle"}, "receiver"));
  box.appendChild(svg("text", {x: 10, y: pad + n * cell / 2, transform: `rotate(-90 10 ${pad + n * cell / 2})`,
                               "text-anchor": "middle"}, "sender"));
  f.heatmap.forEach((row, i) => row.forEach((v, j) => {
    if (!v) return;
    const r = svg("rect", {class: "hm-cell", x: pad + j * cell, y: pad + i * cell, width: cell, height: cell,
                           fill: "#0072B2", "fill-opacity": (0.15 + 0.85 * v / max).toFixed(3),
                           "data-sender": i, "data-receiver": j, "data-count": v});
    r.appendChild(svg("title", {}, `agent ${i} → agent ${j}: ${v}`));
    box.appendChild(r);
  }));
  box.appendChild(svg("text", {x: pad + n * cell + 12, y: pad + 10}, `max ${max}`));
  document.getElementById("heatmap").replaceChildren(box);
  const timeline = document.getElementById("timeline");
  if (!f.rounds.length) { timeline.replaceChildren(el("p", {class: "note"}, "no commands recorded")); return; }
  timeline.replaceChildren(...f.rounds.map((r, idx) => {
    const sent = r.items.filter((it) => it[3] === "sent").length;
    const box = el("details", {class: "round", "data-phase": r.phase, "data-round": r.round},
                   el("summary", {}, `phase ${r.phase} · round ${r.round}: ${r.items.length} commands, ${sent} sends`));
    let drawn = false;
    const draw = () => {
      if (drawn) return;
      drawn = true;
      for (const [agent, verb, to, how, text, ok] of r.items) {
        const arrow = how === "read" ? ` ← read from agent ${to.join(", ")}` : to.length ? ` → ${to.join(", ")}` : "";
        box.appendChild(el("div", {class: "tl-item" + (ok === false ? " flagged" : ""), "data-agent": agent,
                                   "data-verb": verb}, `agent ${agent}${arrow} · ${verb}: ${text}`));
      }
    };
    box.addEventListener("toggle", draw);
    if (idx === 0) { box.open = true; draw(); }
    return box;
  }));
}

function setupTranscripts(header, base, id) {
  const select = document.getElementById("agent-select");
  const target = document.getElementById("transcript");
  if (!header.transcript_agents.length) { target.textContent = "no events recorded for this run"; return; }
  select.replaceChildren(...header.transcript_agents.map((a) => el("option", {value: a}, `agent ${a}`)));
  const show = () => {
    const a = select.value;
    // data-agent names the transcript on show: none while one loads, and a load that a later
    // choice overtook renders nothing (choosing agent 0 again once left "0" on "loading…")
    delete target.dataset.agent;
    target.textContent = "loading…";
    load(base + `agent-${a}.js`, `run:${id}:agent:${a}`)
      .then((entries) => { if (select.value === a) renderTranscript(target, entries, a); })
      .catch(showError);
  };
  select.addEventListener("change", show);
  document.getElementById("expand-all").addEventListener("click", () => {
    for (const d of target.querySelectorAll("details")) d.open = true;
  });
  show();
}

function entryNode(e) {
  if (e.m) {
    const what = e.k === "prompt" ? "system prompt" : e.k === "model_call" ? "reply" : "input";
    const label = `${e.role} · ${what}` + (e.id ? ` · answers tool call ${e.id}` : "") +
                  (e.cap ? " · capped: only its start was recorded" : "") +
                  (e.flag ? ` · ${e.flag}` : "") + (e.e ? `: ${e.e}` : "");
    return el("div", {class: `msg ${e.role}` + (e.flag ? " flagged" : ""), "data-seq": e.s, "data-role": e.role,
                      "data-kind": e.k}, el("div", {class: "label"}, label), el("pre", {class: "content"}, e.c));
  }
  const label = `${e.k}${e.v ? " " + e.v : ""}` + (e.flag ? ` · ${e.flag}` : "");
  return el("div", {class: "record" + (e.flag ? " flagged" : ""), "data-seq": e.s, "data-kind": e.k},
            el("div", {class: "label"}, label), e.t ? el("pre", {class: "command"}, e.t) : null,
            e.rp ? el("pre", {class: "answer"}, "→ " + e.rp) : null);
}

function renderTranscript(target, entries, agent) {
  const out = [];
  let phase = null, call = null, pending = [], calls = 0;
  const total = entries.filter((e) => e.k === "model_call").length;
  const flush = (label) => {
    if (!pending.length) return;
    const box = el("details", {class: "call", open: true}, el("summary", {}, label), ...pending.map(entryNode));
    out.push(box);
    pending = [];
  };
  for (const e of entries) {
    if (e.p !== phase) {
      flush(`inputs after the last call of phase ${phase} (not sent to the model)`);
      phase = e.p; call = null;
      out.push(el("h3", {}, `agent ${agent} · phase ${phase}`));
    }
    if (e.k === "prompt") {
      out.push(el("details", {class: "call system"}, el("summary", {}, "system prompt"), entryNode(e)));
    } else if (e.k === "model_call") {
      calls += 1;
      const flags = [e, ...pending].filter((x) => x.flag).map((x) => x.flag);
      call = el("details", {class: "call", "data-call": calls, open: total <= 30 || flags.length ? true : null},
                el("summary", {class: flags.length ? "flag" : null},
                   `call ${calls} · round ${e.r}` + (flags.length ? ` · ${[...new Set(flags)].join(", ")}` : "")),
                ...pending.map(entryNode), entryNode(e));
      pending = [];
      out.push(call);
    } else if (e.m) {
      pending.push(e);
    } else if (call) {
      call.appendChild(entryNode(e));
      if (e.flag) call.firstChild.classList.add("flag");
    } else {
      out.push(entryNode(e));
    }
  }
  flush("inputs after the last call (not sent to the model)");
  target.replaceChildren(...out);
  target.dataset.agent = agent;
}

/* ------------------------------------------------------------- family panels */

const OKABE = {ok: "#009E73", bad: "#D55E00", none: "#999999", edge: "#BBBBBB", blue: "#0072B2"};

/* Each family's panel renderer registers itself here from its own script
   (masgrid/families/<family>/site_panel.js, copied to assets/panels/ and loaded after this file). */
const MASGRID_PANELS = {};

function renderFamily(view) {
  const box = document.getElementById("family");
  const render = MASGRID_PANELS[view.kind];
  if (render) render(box, view);
  else box.appendChild(el("p", {class: "flag"}, `no renderer installed for the ${view.kind} panel`));
}

document.addEventListener("DOMContentLoaded", () => {
  if (document.body.dataset.page === "index") indexPage();
  else if (document.body.dataset.page === "run") runPage();
});
