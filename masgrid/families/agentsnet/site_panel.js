/* masgrid site panel, loaded after assets/site.js (whose el, svg and OKABE it uses). */
function renderGraph(box, view) {
  box.appendChild(el("h2", {}, "AgentsNet graph"));
  if (view.error) { box.appendChild(el("p", {class: "flag"}, view.error)); return; }
  const g = view.graph;
  const W = 640, H = 460, M = 50;
  const xs = g.nodes.map((n) => n.x), ys = g.nodes.map((n) => n.y);
  const [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  const px = (x) => M + (x1 > x0 ? (x - x0) / (x1 - x0) : 0.5) * (W - 2 * M);
  const py = (y) => M + (y1 > y0 ? (y - y0) / (y1 - y0) : 0.5) * (H - 2 * M);
  const root = svg("svg", {id: "agentsnet-graph", width: W, height: H, role: "img", "aria-label": "AgentsNet graph"});
  for (const [u, v] of g.edges) {
    root.appendChild(svg("line", {class: "edge", x1: px(g.nodes[u].x), y1: py(g.nodes[u].y), x2: px(g.nodes[v].x),
                                  y2: py(g.nodes[v].y), stroke: OKABE.edge, "stroke-width": 1.5}));
  }
  for (const bad of g.violations) {
    const [a, b] = [g.nodes[bad.u], g.nodes[bad.v]];
    const line = svg("line", {class: "violation", "data-why": bad.why, x1: px(a.x), y1: py(a.y), x2: px(b.x), y2: py(b.y),
                              stroke: OKABE.bad, "stroke-width": 3, "stroke-dasharray": "6 3"});
    line.appendChild(svg("title", {}, `${a.name} – ${b.name}: ${bad.why}`));
    root.appendChild(line);
  }
  for (const n of g.nodes) {
    const colour = n.correct === true ? OKABE.ok : n.correct === false ? OKABE.bad : OKABE.none;
    const c = svg("circle", {class: "node", cx: px(n.x), cy: py(n.y), r: 9, fill: colour,
                             stroke: n.byzantine ? "#000" : "#fff", "stroke-width": n.byzantine ? 3 : 1.5,
                             "data-agent": n.id, "data-answer": n.answer === null ? "" : n.answer});
    c.appendChild(svg("title", {}, `agent ${n.id} ${n.name}: ${n.answer === null ? "no answer" : n.answer}` +
                                   (n.byzantine ? " (Byzantine, not scored)" : "")));
    root.appendChild(c);
    root.appendChild(svg("text", {x: px(n.x) + 11, y: py(n.y) + 4},
                         `${n.name}: ${n.answer === null ? "–" : n.answer}`));
  }
  box.appendChild(root);
  const counts = {};
  for (const v of g.violations) counts[v.why] = (counts[v.why] || 0) + 1;
  box.appendChild(el("p", {class: "note", id: "graph-legend"},
    "Node colour: green = the agent's local condition holds (agents.correct), orange = it does not, grey = not scored; " +
    "black ring = Byzantine. Dashed orange edges break the task's rule: " +
    (Object.entries(counts).map(([k, n]) => `${n} ${k}`).join(", ") || "none") + "." +
    (g.note ? " " + g.note + "." : "")));
}

MASGRID_PANELS.agentsnet = renderGraph;
