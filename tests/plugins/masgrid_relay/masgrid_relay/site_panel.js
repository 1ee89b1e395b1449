/* The relay panel (loaded after masgrid's site.js). */
MASGRID_PANELS.relay = (box, view) => {
  box.appendChild(el("h2", {}, "Relay"));
  box.appendChild(el("p", {id: "relay-total"}, `true total ${view.total}`));
  const list = el("ul", {id: "relay-answers"});
  for (const [agent, answer] of Object.entries(view.answers)) list.appendChild(el("li", {}, `agent ${agent}: ${answer}`));
  box.appendChild(list);
};
