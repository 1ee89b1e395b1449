/* masgrid site panel, loaded after assets/site.js (whose el, svg and OKABE it uses). */
function renderChat(box, chat) {
  box.appendChild(el("h2", {}, "SIMAS group chat"));
  const list = el("div", {class: "chat", id: "group-chat"});
  for (const t of chat) {
    list.appendChild(el("div", {class: "turn", "data-agent": t.agent},
                        el("span", {class: "who"}, `round ${t.round} · agent ${t.agent}${t.verb === "final_answer" ? " (final answer)" : ""}: `),
                        el("pre", {}, t.text)));
  }
  box.appendChild(list);
}

MASGRID_PANELS.simas = (box, view) => renderChat(box, view.chat);
