// lightrag_prism explorer: queries /prism/api/query and draws what came back. No dependencies, no network
// access beyond this server; all text from the index is inserted with textContent (never as HTML).
"use strict";

const KNOBS = ["top_k", "chunk_top_k", "max_hop", "top_ppr_nodes", "top_fastrp_nodes", "ppr_damping"];
const SVG_NS = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);

function headers() {
  const h = { "Content-Type": "application/json" };
  const key = $("api-key").value || localStorage.getItem("prism-api-key");
  if (key) h["X-API-Key"] = key;
  const token = localStorage.getItem("LIGHTRAG-API-TOKEN");  // set by the stock WebUI's login
  if (token) h["Authorization"] = "Bearer " + token;
  return h;
}

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (cls) node.className = cls;
  return node;
}

async function api(path, body) {
  const init = body ? { method: "POST", headers: headers(), body: JSON.stringify(body) } : { headers: headers() };
  const response = await fetch(path, init);
  const payload = await response.json().catch(() => ({}));
  if (!response.ok) {
    const detail = payload.detail;
    const message = typeof detail === "string" ? detail
      : Array.isArray(detail) ? detail.map((d) => d.msg || JSON.stringify(d)).join("; ") : response.statusText;
    throw new Error(`${response.status}: ${message}`);
  }
  return payload;
}

async function loadModes() {
  const info = await api("/prism/api/modes");
  const select = $("mode");
  select.replaceChildren(...info.modes.map((m) => {
    const option = el("option", info.plugin_modes.includes(m) ? `${m} (lightrag_prism)` : m);
    option.value = m;
    return option;
  }));
  select.value = info.modes.includes("prism") ? "prism" : info.modes[0];
  $("llm-status").textContent = info.llm_configured ? "LLM configured" : "no LLM: retrieval only";
  $("answer").disabled = !info.llm_configured;
  $("answer").checked = info.llm_configured;
}

function requestBody() {
  const body = { query: $("query").value.trim(), mode: $("mode").value, answer: $("answer").checked };
  for (const name of KNOBS) {
    const value = $(name).value;
    if (value !== "") body[name] = Number(value);
  }
  return body;
}

function renderList(target, items, render) {
  $(target).replaceChildren(...items.map(render));
}

// "file p. 2–3 § Section", as the command line prints it (citations/store.py:citation_label)
function citationLabel(chunk) {
  const c = chunk.citation || {};
  let label = c.file || chunk.file_path || "unknown source";
  if (Array.isArray(c.pages)) label += ` p. ${c.pages[0]}` + (c.pages[1] !== c.pages[0] ? `–${c.pages[1]}` : "");
  if (c.section) label += ` § ${c.section}`;
  return label;
}

function renderPassage(chunk, i) {
  const li = el("li", undefined, "passage");
  const meta = el("div", undefined, "meta");
  meta.append(el("b", `#${i + 1}`), " score ", el("span", Number(chunk.score ?? 0).toFixed(3), "score"), " ");
  for (const tag of String(chunk.found_by || "").split("+").filter(Boolean)) meta.append(el("span", tag, "badge"));
  meta.append(" ", el("span", citationLabel(chunk), "muted citation"));
  li.append(meta, el("p", (chunk.content || "").slice(0, 400), "text"));
  return li;
}

// multi-hop paths of retrieved entities (prism), reasoning paths (fidelis) and kept facts (hipporag)
function pathLines(data, prism) {
  const triple = (t) => `${t[0]} —${t[1]}→ ${t[2]}`;
  const score = (x) => Number(x ?? 0).toFixed(3);
  const lines = data.entities.filter((e) => Array.isArray(e.path) && e.path.length > 1)
    .map((e) => `${e.path.join(" → ")}  (${e.found_by}, ${score(e.score)})`);
  for (const path of prism.paths || []) lines.push(`${path.map(triple).join("; ")}  (fidelis path)`);
  for (const f of (prism.hipporag || {}).facts || []) lines.push(`${triple(f.fact)}  (fact, ${score(f.score)})`);
  return lines;
}

function renderResult(result) {
  const data = result.data;
  $("answer-box").hidden = !result.answer;
  $("answer-text").textContent = result.answer || "";
  $("note").hidden = !result.note;
  $("note").textContent = result.note || "";
  renderList("passages", data.chunks, renderPassage);
  renderList("seeds", result.graph.seeds, (name) => el("li", name));
  renderList("paths", pathLines(data, result.metadata.prism || {}), (line) => el("li", line));
  const fallbacks = (result.metadata.prism || {}).fallbacks || [];
  renderList("fallbacks", fallbacks, (f) => el("li", `${f.step}: ${f.reason}`));
  drawGraph(result.graph);
}

function svg(tag, attrs) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}

function drawGraph(graph) {
  const perColumn = {};
  for (const n of graph.nodes) perColumn[n.kind] = (perColumn[n.kind] || 0) + 1;
  const width = 1000, height = Math.max(240, 30 * Math.max(1, ...Object.values(perColumn)) + 40);
  const at = (n) => [n.x * width, 20 + n.y * (height - 40)];
  const byId = Object.fromEntries(graph.nodes.map((n) => [n.id, n]));
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "evidence subgraph" });
  for (const e of graph.edges) {
    const [x1, y1] = at(byId[e.source]), [x2, y2] = at(byId[e.target]);
    // edges inside one column bow to the left instead of running along the column
    const bend = x1 === x2 ? x1 - 30 - Math.abs(y2 - y1) * 0.25 : (x1 + x2) / 2;
    const line = svg("path", { d: `M${x1},${y1} Q${bend},${(y1 + y2) / 2} ${x2},${y2}`, class: `edge ${e.kind}` });
    if (e.label) line.append(Object.assign(svg("title", {}), { textContent: e.label }));
    root.append(line);
  }
  for (const n of graph.nodes) {
    const [x, y] = at(n);
    const group = svg("g", { class: `node-group ${n.kind}`, "data-id": n.id });
    const circle = svg("circle", { cx: x, cy: y, r: n.kind === "passage" ? 7 : 6, class: `node ${n.kind}` });
    circle.append(Object.assign(svg("title", {}), { textContent: n.label }));
    const label = svg("text", { x: x + 10, y: y + 4, class: "label" });
    label.textContent = n.label.length > 34 ? n.label.slice(0, 33) + "…" : n.label;
    group.append(circle, label);
    root.append(group);
  }
  $("graph").replaceChildren(root);
}

async function run(event) {
  if (event) event.preventDefault();
  const body = requestBody();
  if (!body.query) return;
  if ($("api-key").value) localStorage.setItem("prism-api-key", $("api-key").value);
  $("status").textContent = `searching (${body.mode})…`;
  $("run").disabled = true;
  const started = performance.now();
  try {
    const result = await api("/prism/api/query", body);
    renderResult(result);
    const n = result.data.chunks.length;
    const ms = Math.round(performance.now() - started);
    $("status").textContent = `${n} passage(s), ${result.graph.nodes.length} node(s) in ${ms} ms`;
    document.body.dataset.state = "done";
  } catch (err) {
    $("status").textContent = `Error ${err.message}`;
    document.body.dataset.state = "error";
  } finally {
    $("run").disabled = false;
  }
}

async function start() {
  $("query-form").addEventListener("submit", run);
  try {
    await loadModes();
  } catch (err) {
    $("status").textContent = `Error ${err.message} (an API key may be needed)`;
  }
  const params = new URLSearchParams(location.search);  // /prism?q=...&mode=hipporag&run=1 links to a query
  if (params.get("q")) $("query").value = params.get("q");
  if (params.get("mode")) $("mode").value = params.get("mode");
  document.body.dataset.state = "ready";
  if (params.get("run") === "1") run();
}

start();
