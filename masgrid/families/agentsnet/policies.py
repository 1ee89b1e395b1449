"""Classical baselines of appendix K as scripted agents on the LOCAL protocol.

Each policy answers exactly like a model would: a JSON object of messages per round and a
'### Final Answer ###' line after the last round, so it runs through the same parser,
validator, delivery and round budget as an LLM. A message is "STATE <json>"; the inbox of
a round is read back from the delivery text the protocol writes.

- coloring: randomized (Delta+1)-colouring in Luby's style: an uncoloured agent proposes a
  random colour not fixed by a neighbour and keeps it when no neighbour proposed or fixed
  the same colour in that round; agents still uncoloured at the end take the smallest
  colour not fixed around them (which may clash, so short budgets can fail);
- vertex cover: complement of the random-priority greedy maximal independent set (the set
  Luby's rule converges to: an agent joins iff no higher-priority neighbour joins), each
  agent deciding from the priorities and adjacency it gathered by flooding; the complement
  of a maximal independent set is a minimal vertex cover; agents still undecided at the end
  (budget below the diameter) say "Yes" (keeps the cover valid);
- matching: randomized proposals: a free agent either proposes to a random free neighbour
  (then waits a round for the answer) or accepts one proposal it received; two agents
  that propose to each other in the same round are matched;
- leader election: flood the lexicographically smallest name; the agent whose own name
  survives says "Yes";
- consensus: every agent draws a random bit and keeps the minimum it has seen.
Byzantine agents (scripted) send random states and answer at random (appendix I).
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from masgrid.families.agentsnet.local_protocol import FINAL_MARKER
from masgrid.sdk.policies import ScriptedPolicy
from masgrid.sdk.tasks import AgentView

_ITEM = re.compile(r"^From (\S+):\n\nSTATE (\{.*?\})$", re.MULTILINE)


class LocalPolicy(ScriptedPolicy):
    """Round bookkeeping shared by the baselines: inbox parsing, message and answer format."""

    def __init__(self, view: AgentView, protocol: str, seed: int = 0) -> None:
        super().__init__(view, protocol, seed)
        local = view.local_input
        self.me: str = local["name"]
        self.nbs: list[str] = list(local["neighbors"])
        self.options: list[str] = list(local["valid_answers"])
        self.rounds = int(view.params["rounds"])
        self.rng = random.Random(seed)
        self.call = 0
        self.known: dict[str, dict[str, Any]] = {}  # latest state heard from each neighbour

    def act(self, observations: list[str]) -> str:
        self.call += 1
        inbox: dict[str, dict[str, Any]] = {}
        for obs in observations:
            for sender, payload in _ITEM.findall(obs):
                if sender in self.nbs:
                    inbox[sender] = json.loads(payload)
        self.known.update(inbox)
        final = self.call > self.rounds
        self.update(inbox, final)
        if final:
            return f"{FINAL_MARKER} {self.answer()}"
        out: dict[str, str] = {}
        last: tuple[dict[str, Any], str] | None = None  # most policies send every neighbour the same state
        for nb in self.nbs:
            state = self.message(nb)
            if last is None or state != last[0]:
                last = (state, "STATE " + json.dumps(state, separators=(",", ":")))
            out[nb] = last[1]
        return json.dumps(out)

    def update(self, inbox: dict[str, dict[str, Any]], final: bool) -> None: ...

    def message(self, neighbor: str) -> dict[str, Any]:
        raise NotImplementedError

    def answer(self) -> str:
        raise NotImplementedError


class MinFloodConsensus(LocalPolicy):
    def __init__(self, view: AgentView, protocol: str, seed: int = 0) -> None:
        super().__init__(view, protocol, seed)
        self.value = self.rng.randint(0, 1)

    def update(self, inbox: dict[str, dict[str, Any]], final: bool) -> None:
        self.value = min([self.value, *(int(m["v"]) for m in inbox.values())])

    def message(self, neighbor: str) -> dict[str, Any]:
        return {"v": self.value}

    def answer(self) -> str:
        return str(self.value)


class MinNameLeader(LocalPolicy):
    def __init__(self, view: AgentView, protocol: str, seed: int = 0) -> None:
        super().__init__(view, protocol, seed)
        self.best = self.me

    def update(self, inbox: dict[str, dict[str, Any]], final: bool) -> None:
        self.best = min([self.best, *(str(m["min"]) for m in inbox.values())])

    def message(self, neighbor: str) -> dict[str, Any]:
        return {"min": self.best}

    def answer(self) -> str:
        return "Yes" if self.best == self.me else "No"


class LubyColoring(LocalPolicy):
    def __init__(self, view: AgentView, protocol: str, seed: int = 0) -> None:
        super().__init__(view, protocol, seed)
        self.palette = list(range(1, int(view.params["groups"]) + 1))
        self.color: int | None = None
        self.tentative: int | None = None

    def _fixed_around(self) -> set[int]:
        return {m["c"] for m in self.known.values() if m.get("c") is not None}

    def update(self, inbox: dict[str, dict[str, Any]], final: bool) -> None:
        if self.color is None and self.tentative is not None:
            proposed = {m.get("t") for m in inbox.values()}
            if self.tentative not in proposed and self.tentative not in self._fixed_around():
                self.color = self.tentative
        self.tentative = None
        if self.color is None:
            free = [c for c in self.palette if c not in self._fixed_around()] or self.palette
            if final:
                self.color = free[0]
            else:
                self.tentative = self.rng.choice(free)

    def message(self, neighbor: str) -> dict[str, Any]:
        return {"t": self.tentative, "c": self.color}

    def answer(self) -> str:
        return f"Group {self.color}"


class LubyVertexCover(LocalPolicy):
    """Complement of the random-priority greedy MIS, decided from the gathered neighbourhood.

    Run round by round, Luby's rule (join when beating every undecided neighbour; leave when
    a neighbour joined) spends two rounds per phase and left agents undecided on 16-node
    graphs within the 6-round budget. Its outcome is fixed by the priorities alone (u is in
    iff no higher-priority neighbour is in), so each agent floods (priority, neighbours) of
    every agent it has heard of, one hop per round, and evaluates that rule on what it knows.
    After T rounds it knows everyone within distance T, so when T >= the graph's diameter
    every agent decides, all from the same global MIS, and the cover is minimal.
    """

    def __init__(self, view: AgentView, protocol: str, seed: int = 0) -> None:
        super().__init__(view, protocol, seed)
        self.priority = self.rng.getrandbits(32)
        #: name -> (priority, neighbours) of every agent heard of so far, this one included
        self.ball: dict[str, tuple[int, list[str]]] = {self.me: (self.priority, self.nbs)}
        self.fresh: dict[str, tuple[int, list[str]]] = dict(self.ball)  # sent on in this round
        self.status: bool | None = None  # in the MIS (answers No) / out (Yes) / undecided
        self.has: dict[str, set[str]] = {}  # neighbour -> names it is known to have heard of

    def update(self, inbox: dict[str, dict[str, Any]], final: bool) -> None:
        new: dict[str, tuple[int, list[str]]] = {}
        for sender, state in inbox.items():
            known = state.get("k")
            if isinstance(known, dict):
                self.has.setdefault(sender, {sender}).update(known)
            for name, entry in (known.items() if isinstance(known, dict) else ()):
                if name in self.ball or name in new or not _is_entry(entry):
                    continue
                new[name] = (int(entry[0]), [str(n) for n in entry[1]])
        self.ball.update(new)
        if self.call > 1:
            self.fresh = new
        if self.status is None:  # a decision never changes: the rule reads only fixed priorities
            self.status = self._in_mis(self.me, {})

    def _in_mis(self, name: str, memo: dict[str, bool | None]) -> bool | None:
        """Greedy-MIS membership by priority (ties by name); None while some input is unknown."""
        if name in memo:
            return memo[name]
        priority, nbs = self.ball[name]
        if any(w not in self.ball for w in nbs):
            memo[name] = None
            return None
        higher = sorted((w for w in nbs if (self.ball[w][0], w) > (priority, name)),
                        key=lambda w: (self.ball[w][0], w), reverse=True)
        result: bool | None = True
        for w in higher:
            verdict = self._in_mis(w, memo)
            if verdict:
                result = False
                break
            if verdict is None:
                result = None
        memo[name] = result
        return result

    def message(self, neighbor: str) -> dict[str, Any]:
        # What a neighbour told us it has heard of, it needs no more (saves most of the traffic).
        has = self.has.setdefault(neighbor, {neighbor})
        send = {name: [p, nbs] for name, (p, nbs) in self.fresh.items() if name not in has}
        has.update(send)
        return {"k": send}

    def answer(self) -> str:
        # Undecided agents (T below the diameter) say Yes: the cover stays valid, maybe not minimal.
        return "No" if self.status else "Yes"


def _is_entry(entry: Any) -> bool:
    return (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], int)
            and not isinstance(entry[0], bool) and isinstance(entry[1], list))


class RandomMatching(LocalPolicy):
    def __init__(self, view: AgentView, protocol: str, seed: int = 0) -> None:
        super().__init__(view, protocol, seed)
        self.partner: str | None = None
        self.proposed_to: str | None = None  # waiting for this neighbour's acceptance
        self.proposed_at = 0  # the call whose message carried the proposal
        self.accepting: str | None = None  # acceptance sent in this call's messages

    def update(self, inbox: dict[str, dict[str, Any]], final: bool) -> None:
        self.accepting = None
        if self.partner is not None:
            return
        if self.proposed_to is not None:
            if self.call == self.proposed_at + 1:
                if inbox.get(self.proposed_to, {}).get("prop"):  # we proposed to each other
                    self.partner, self.proposed_to = self.proposed_to, None
                return  # otherwise the neighbour reads the proposal now; its answer comes next call
            if inbox.get(self.proposed_to, {}).get("acc"):
                self.partner = self.proposed_to
            self.proposed_to = None
            if self.partner is not None:
                return
        if final:
            return
        suitors = sorted(nb for nb, m in inbox.items() if m.get("prop"))
        if suitors:  # accept one proposal; its sender is waiting for exactly this answer
            self.partner = self.accepting = self.rng.choice(suitors)
            return
        free = [nb for nb in self.nbs if self.known.get(nb, {"free": True}).get("free")]
        # A proposal needs two more calls (acceptance, then reading it): none in round T.
        if free and self.call < self.rounds and self.rng.random() < 0.5:
            self.proposed_to, self.proposed_at = self.rng.choice(free), self.call

    def message(self, neighbor: str) -> dict[str, Any]:
        msg: dict[str, Any] = {"free": self.partner is None}
        if neighbor == self.accepting:
            msg["acc"] = True
        if neighbor == self.proposed_to and self.proposed_at == self.call:
            msg["prop"] = True
        return msg

    def answer(self) -> str:
        return self.partner or "None"


class RandomAdversary(LocalPolicy):
    """A scripted Byzantine agent: random but well-formed states, a random final answer."""

    def message(self, neighbor: str) -> dict[str, Any]:
        pick = self.rng.choice(self.options)
        return {"v": self.rng.randint(0, 1), "min": "A", "t": self.rng.randint(1, 3), "c": None,
                "p": 2.0, "s": "undecided", "free": True, "prop": pick == neighbor}

    def answer(self) -> str:
        return self.rng.choice(self.options)


_POLICIES: dict[str, type[LocalPolicy]] = {
    "consensus": MinFloodConsensus,
    "leader_election": MinNameLeader,
    "coloring": LubyColoring,
    "vertex_cover": LubyVertexCover,
    "matching": RandomMatching,
}


def make_policy(problem: str, view: AgentView, protocol: str, seed: int) -> ScriptedPolicy:
    if protocol != "local":
        raise ValueError(f"protocol: AgentsNet baselines run on protocol=local, not {protocol!r}")
    if view.local_input.get("byzantine"):
        return RandomAdversary(view, protocol, seed)
    return _POLICIES[problem](view, protocol, seed)
