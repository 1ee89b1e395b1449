/* masgrid site panel, loaded after assets/site.js (whose el, svg and OKABE it uses). */
function renderResolver(box, r, left) {
  /* The llm merge stage (appendix C): the resolver model, its outcome, each call as sent. */
  const failed = r.outcome !== "resolved" && r.outcome !== null;
  box.appendChild(el("p", {id: "cooper-resolver"}, `LLM resolver ${r.model}: `,
    el("b", {class: failed ? "flag" : null}, String(r.outcome)),
    r.failure ? ` (${r.failure})` : "", `, ${r.calls.length} call(s), conflict hunks left ${left}.`));
  r.calls.forEach((c, i) => {
    const head = `resolver call ${i + 1}: ${c.ok ? "answered" : "failed"}` +
      (c.error ? ` (${c.error})` : "") + `, tokens ${c.tokens_in} in / ${c.tokens_out} out, ${c.latency_s} s`;
    const details = el("details", {class: "cooper-resolver-call"}, el("summary", {class: c.ok ? null : "flag"}, head));
    details.appendChild(el("p", {}, "sent:"));
    details.appendChild(el("pre", {}, c.prompt || ""));
    details.appendChild(el("p", {}, "answered:"));
    details.appendChild(el("pre", {}, c.reply || "(nothing)"));
    box.appendChild(details);
  });
}

function renderCooperBench(box, view) {
  /* Each agent's diff against the base commit, the merge stage reached with its conflict
     counts, and every feature's test outcome (masgrid/families/cooper/site_panel.py). */
  box.appendChild(el("h2", {}, "CooperBench"));
  if (!view) { box.appendChild(el("p", {class: "note"}, "No evaluation recorded for this run.")); return; }
  const m = view.merge || {};
  const conflicts = (n) => (n === null || n === undefined ? "not reached" : String(n));
  box.appendChild(el("p", {id: "cooper-merge"},
    `Setting ${view.setting}, features ${view.features}, sandbox ${view.sandbox}. Merge stage reached: `,
    el("b", {}, String(m.stage)), ` (conflict hunks: naive ${conflicts(m.conflicts_naive)}, union ${conflicts(m.conflicts_union)}). `,
    "Task success: ", el("b", {class: view.success ? null : "flag"}, String(view.success))));
  if (m.notes) box.appendChild(el("p", {class: "note"}, m.notes));
  if (view.resolver) renderResolver(box, view.resolver, conflicts(m.conflicts_llm));
  const tests = el("table", {id: "cooper-tests"}, el("tr", {}, el("th", {}, "feature"), el("th", {}, "tests")));
  for (const t of view.tests || []) {
    tests.appendChild(el("tr", {class: t.passed ? null : "flagged"}, el("td", {}, String(t.feature)),
      el("td", {}, t.passed ? "passed" : "failed")));
  }
  box.appendChild(tests);
  for (const d of view.diffs || []) {
    const head = `agent ${d.agent} (feature ${d.features.join(", ")}): finished ${d.finish}, ${d.actions} actions, ` +
      `${d.messages} messages${d.capped ? ", stopped at the action cap" : ""}`;
    const details = el("details", {class: "cooper-diff", open: true}, el("summary", {}, head));
    if (d.summary) details.appendChild(el("p", {class: "note"}, d.summary));
    const pre = el("pre", {});
    for (const line of (d.patch || "(no changes)").split("\n")) {
      const cls = line.startsWith("+") && !line.startsWith("+++") ? "diff-add"
        : line.startsWith("-") && !line.startsWith("---") ? "diff-del" : null;
      pre.appendChild(el("span", {class: cls}, line + "\n"));
    }
    details.appendChild(pre);
    if (d.cut) details.appendChild(el("p", {class: "flag"}, `diff cut at ${d.patch.length} of ${d.patch_chars} characters`));
    box.appendChild(details);
  }
}

MASGRID_PANELS.cooperbench = (box, view) => renderCooperBench(box, view.view);
