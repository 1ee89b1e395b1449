"""Round-start visibility (SILO-Bench A.5): renumbering the agents changes nothing.

Scenarios are written over *roles*; a permutation maps roles to agent ids, so the
environment applies the same replies in a different order. Under SILO's options every
send is refused, accepted or delivered the same way and D is the same; under MAS-Bench's
defaults (sequential application, Algorithm 2) some scenarios differ, which shows the
comparison can fail. MAS-Bench's own documented semantics are checked separately.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from typing import Any

import pytest

from masgrid._private.actors.environment import EnvironmentHost
from masgrid._private.envs.protocols import ProtocolOptions, make_protocol
from masgrid._private.envs.protocols.base import Protocol
from masgrid._private.envs.tasks import get_task

SILO = ProtocolOptions.strict_rounds()
Scenario = list[dict[int, list[tuple[str, Any]]]]  # per round: role -> commands (verb, role argument)


def block(*commands: str) -> str:
    return "\n".join(f"```\n{c}\n```" for c in commands)


def random_scenario(rng: random.Random, protocol: str, n: int, rounds: int) -> Scenario:
    """Commands per round and role; a role that submits is not stepped again (lockstep)."""
    verbs = {"p2p": ["send", "send", "receive"], "broadcast": ["broadcast", "receive", "list"],
             "kv": ["write", "read", "list"]}[protocol]
    scenario: Scenario = []
    done: set[int] = set()
    for r in range(rounds):
        step: dict[int, list[tuple[str, Any]]] = {}
        for role in range(n):
            if role in done:
                continue
            cmds = [(v, rng.choice([x for x in range(n) if x != role])) for v in rng.choices(verbs, k=rng.randint(1, 3))]
            if rng.random() < 0.3 and r > 0:
                cmds.append(("submit", None))
                done.add(role)
            step[role] = cmds
        scenario.append(step)
    return scenario


def command_text(protocol: str, verb: str, arg: Any, role: int, r: int, ids: list[int]) -> str:
    """One command of `role` in round r, naming other roles by their agent ids."""
    return {"send": f"send_message {ids[arg] if arg is not None else 0} m{role}.{r}",
            "broadcast": f"broadcast_message b{role}.{r}", "receive": "receive_messages",
            "list": "list_files" if protocol == "kv" else "list_agents",
            "write": f"write_file role{role}/r{r}\nv{role}.{r}", "read": f"read_file role{arg}/r{r - 1}",
            "submit": "submit_result 1"}[verb]


def observed(protocol: str, p: Protocol | None, env: EnvironmentHost | None, scenario: Scenario,
             perm: list[int]) -> tuple[list, Counter]:
    """What every role saw and what every send did, in role terms, with agents numbered by `perm`."""
    role_of = {agent: role for role, agent in enumerate(perm)}
    seen: list = []
    reached: Counter = Counter()
    for r, step in enumerate(scenario, start=1):
        texts = {}
        for role, cmds in step.items():
            texts[perm[role]] = block(*[command_text(protocol, v, a, role, r, perm) for v, a in cmds])
        if env is not None:
            out = env.apply_round(r, [(a, t, None) for a, t in texts.items()])
            outcomes = {a: [(o.verb, o.reply, o.deliveries, o.peers, o.received) for o in recs] for a, recs in out.items()}
        else:
            p.begin_round(r)
            applied = {a: p.apply_reply(a, texts[a], None) for a in sorted(texts)}
            p.close_round()
            outcomes = {a: [(o.verb, o.reply, o.deliveries, o.extra.get("peers", []), o.extra.get("received", 0))
                            for o in outs] for a, outs in applied.items()}
        for agent, outs in outcomes.items():
            role = role_of[agent]
            for verb, reply, deliveries, peers, received in outs:
                peers_roles = sorted(role_of[j] for j in peers)
                if verb in ("send_message", "broadcast_message"):
                    for j in peers_roles:
                        reached[(role, j)] += 1
                    refused = "offline" in reply
                    assert deliveries == len(peers_roles)  # D's numerator is the reached receivers
                    seen.append((r, role, verb, deliveries, tuple(peers_roles), refused))
                elif verb == "receive_messages":
                    seen.append((r, role, verb, received, tuple(peers_roles)))
                elif verb == "list_agents":
                    status = dict(re.findall(r"Agent-(\d+): (\w+)", reply))
                    seen.append((r, role, verb, tuple(status[str(perm[x])] for x in range(len(perm)))))
                elif verb == "read_file":
                    seen.append((r, role, verb, reply, tuple(peers_roles)))
                elif verb == "list_files":
                    seen.append((r, role, verb, tuple(sorted(re.findall(r"path=(\S+)", reply)))))
                else:
                    seen.append((r, role, verb, reply))
    return seen, reached


def both_numberings(protocol: str, options: ProtocolOptions, scenario: Scenario, perm: list[int]) -> list[tuple]:
    """`observed` with agents numbered as the roles, then numbered by `perm`."""
    n = len(perm)
    return [observed(protocol, make_protocol(protocol, n, lambda a, raw: int(raw), options), None, scenario, ids)
            for ids in (list(range(n)), perm)]


def cases(seed: str, protocol: str, count: int, lo: int, hi: int, rounds: int):
    """(case, n, scenario, a random renumbering) for `count` random scenarios of lo..hi agents."""
    rng = random.Random(seed)
    for case in range(count):
        n = rng.randint(lo, hi)
        scenario = random_scenario(rng, protocol, n, rounds)
        perm = list(range(n))
        rng.shuffle(perm)
        yield case, n, scenario, perm


def density(reached: Counter, n: int) -> float:
    return sum(reached.values()) / (n * (n - 1))


@pytest.mark.parametrize("protocol", ["p2p", "broadcast", "kv"])
def test_silo_renumbering_gives_the_same_deliveries_refusals_and_density(protocol: str) -> None:
    for case, n, scenario, perm in cases(f"roster:{protocol}", protocol, 150, 2, 6, rounds=4):
        base, moved = both_numberings(protocol, SILO, scenario, perm)
        assert sorted(base[0], key=repr) == sorted(moved[0], key=repr), (case, perm)
        assert base[1] == moved[1] and density(base[1], n) == density(moved[1], n), (case, perm)


@pytest.mark.parametrize("protocol", ["p2p", "broadcast"])
def test_masbench_order_dependence_is_detected(protocol: str) -> None:
    """Control: the same comparison finds MAS-Bench's sequential semantics order-dependent."""
    differs = 0
    for _, n, scenario, _ in cases(f"control:{protocol}", protocol, 150, 3, 6, rounds=4):
        base, moved = both_numberings(protocol, ProtocolOptions(), scenario, list(range(n))[::-1])
        differs += sorted(base[0], key=repr) != sorted(moved[0], key=repr)
    assert differs > 10


@pytest.mark.parametrize("protocol", ["p2p", "broadcast"])
def test_silo_environment_renumbered_through_the_real_host(protocol: str) -> None:
    """The environment actor's host settles deliveries before recording (OutcomeRecord.deliveries)."""
    for case, n, scenario, perm in cases(f"host:{protocol}", protocol, 20, 2, 5, rounds=3):
        runs = []
        for numbering in (list(range(n)), perm):
            env = EnvironmentHost(protocol, get_task("silo/I-06").generate(n, 2, case))
            runs.append(observed(protocol, None, env, scenario, numbering))
        assert sorted(runs[0][0], key=repr) == sorted(runs[1][0], key=repr), (case, perm)
        assert runs[0][1] == runs[1][1]


def _round(p: Protocol, r: int, replies: dict[int, str]) -> dict[int, list]:
    p.begin_round(r)
    out = {a: p.apply_reply(a, block(*[c for c in replies[a].split("|")]), None) for a in sorted(replies)}
    p.close_round()
    return out


@pytest.mark.parametrize("low,high", [(0, 2), (2, 0)])
def test_silo_send_to_an_agent_submitting_in_the_same_round(low: int, high: int) -> None:
    """Agent 1 submits in round 1 while a lower- and a higher-numbered agent message it:
    both sends are accepted and neither is delivered (D counts 0); in round 2 both are refused."""
    for name, send in (("p2p", "send_message 1 x"), ("broadcast", "broadcast_message x")):
        p = make_protocol(name, 3, lambda a, raw: int(raw), SILO)
        out = _round(p, 1, {low: send, 1: "submit_result 4", high: send})
        for sender in (low, high):
            o = out[sender][0]
            assert o.ok and "offline" not in o.reply and o.reply.startswith("sent")
            assert 1 not in o.extra["peers"]
            assert o.deliveries == (0 if name == "p2p" else 1)  # BP: only the other active agent
        out = _round(p, 2, {low: send, high: send})
        for sender in (low, high):
            o = out[sender][0]
            if name == "p2p":
                assert "offline" in o.reply and o.deliveries == 0
            else:
                assert o.extra["peers"] == [high if sender == low else low] and o.deliveries == 1


def test_silo_list_agents_shows_the_round_start_roster() -> None:
    p = make_protocol("broadcast", 3, lambda a, raw: int(raw), SILO)
    out = _round(p, 1, {0: "submit_result 1", 1: "list_agents"})
    assert "Agent-0: active" in out[1][0].reply  # agent 0 submitted during this round
    out = _round(p, 2, {1: "list_agents"})
    assert "Agent-0: submitted" in out[1][0].reply


def test_masbench_keeps_its_sequential_semantics_and_submission_side_effects() -> None:
    """docs/tasks/masbench.md: P2P refuses only after the receiver's submission was applied;
    BP's submission notice reaches every other agent, submitted or not; SFS writes a file."""
    p = make_protocol("p2p", 3, lambda a, raw: int(raw))
    out = _round(p, 1, {0: "send_message 1 x", 1: "submit_result 4", 2: "send_message 1 y"})
    assert out[0][0].reply == "delivered to Agent-1" and out[0][0].deliveries == 1
    assert out[2][0].reply.startswith("Agent-1 is offline") and out[2][0].deliveries == 0
    b = make_protocol("broadcast", 3, lambda a, raw: int(raw))
    out = _round(b, 1, {0: "submit_result 4", 1: "submit_result 5|broadcast_message z"})
    assert out[0][0].reply == "recorded 4 | broadcasted to Agent-1, Agent-2"
    assert out[0][0].deliveries == 0  # the notice is a harness side effect, not a message
    assert out[1][1].reply == "delivered (Agent-0, Agent-2)" and out[1][1].deliveries == 2
    assert "Agent-0 submitted result 4" in _round(b, 2, {2: "receive_messages"})[2][0].reply
    kv = make_protocol("kv", 2, lambda a, raw: int(raw))
    out = _round(kv, 1, {0: "submit_result 3", 1: "read_file Agent-0_submission.txt"})
    assert out[0][0].reply == "recorded 3 | wrote_file=Agent-0_submission.txt"
    assert out[1][0].reply == "content=Agent-0 is offline and submitted 3"


def expected_reached(protocol: str, scenario: Scenario, n: int) -> Counter:
    """Independent of the protocol code, from A.5 as documented: a message sent in round r
    reaches an active receiver iff the receiver has not submitted by the end of round r."""
    submitted_in = {role: r for r, step in enumerate(scenario, start=1)
                    for role, cmds in step.items() if ("submit", None) in cmds}
    reached: Counter = Counter()
    for r, step in enumerate(scenario, start=1):
        for role, cmds in step.items():
            for verb, arg in cmds:
                targets = [arg] if verb == "send" else [j for j in range(n) if j != role] if verb == "broadcast" else []
                for j in targets:
                    if submitted_in.get(j, len(scenario) + 1) > r:
                        reached[(role, j)] += 1
    return reached


@pytest.mark.parametrize("protocol", ["p2p", "broadcast"])
def test_silo_deliveries_match_an_independent_count(protocol: str) -> None:
    for case, n, scenario, _ in cases(f"independent:{protocol}", protocol, 150, 2, 6, rounds=4):
        _, reached = observed(protocol, make_protocol(protocol, n, lambda a, raw: int(raw), SILO), None, scenario,
                              list(range(n)))
        assert reached == expected_reached(protocol, scenario, n), case
