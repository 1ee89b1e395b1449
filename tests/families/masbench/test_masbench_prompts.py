import difflib
import random
import re
from pathlib import Path

import pytest
import yaml

from masgrid._private.envs.tasks import get_task

ROOT = Path(__file__).resolve().parents[3]
PROMPTS = ROOT / "masgrid" / "families" / "masbench" / "conf" / "prompts" / "masbench"

CONDITIONS = ["base", "abl_message", "abl_submit", "camoc"]


def normalise(prompt: str, view) -> str:
    """Remove what may legitimately differ between agents: the id and the data."""
    out = prompt.replace(str(view.local_input).replace(" ", ""), "<DATA>")
    out = out.replace("[" + ", ".join(map(str, view.local_input)) + "]", "<DATA>")
    out = out.replace(f"You are Agent-{view.agent},", "You are Agent-<ME>,")
    # the example reply is written as the reader, and the p2p example addresses another agent
    out = out.replace(f"Agent-{view.agent} here", "Agent-<ME> here").replace(f"lists/agent-{view.agent}\n", "lists/agent-<ME>\n")
    peer = 1 if view.agent == 0 else 0
    return out.replace(f"send_message {peer} ", "send_message <PEER> ").replace(f"to Agent-{peer}", "to Agent-<PEER>")\
        .replace(f"tell Agent-{peer} ", "tell Agent-<PEER> ")


@pytest.mark.parametrize("task_name", ["sorting", "max", "prefix_sum"])
@pytest.mark.parametrize("protocol", ["broadcast", "p2p", "kv"])
@pytest.mark.parametrize("condition", CONDITIONS)
def test_prompts_structurally_identical_modulo_id_and_data(task_name, protocol, condition):
    task = get_task(task_name)
    inst = task.generate(4, 3, 0, mode="random")
    prompts = set()
    for i in range(4):
        view = task.view(inst, i)
        prompt = task.build_prompt(view, protocol, condition)
        assert f"You are Agent-{i}," in prompt
        assert "check_results" in prompt
        prompts.add(normalise(prompt, view))
    assert len(prompts) == 1


def test_camoc_inserts_three_clauses_and_drops_expectations_bullet():
    task = get_task("sorting")
    inst = task.generate(3, 2, 0, mode="asc")
    view = task.view(inst, 0)
    short = task.build_prompt(view, "kv", "base")
    camoc = task.build_prompt(view, "kv", "camoc")
    assert "what you expect the other agents to do next" in short
    assert "what you expect the other agents to do next" not in camoc
    for title in ("Mind your own part", "Answer requests first", "Read everything, then act"):
        assert title not in short and title in camoc
    # clauses sit between the early-submission rule and the submit lock
    assert camoc.index("Do not submit too early") < camoc.index("Mind your own part") < camoc.index("Submitting is final")
    assert task.build_prompt(view, "kv", "abl_submit") == camoc  # same prompt, one phase
    assert task.build_prompt(view, "kv", "abl_message") == short


def test_rerun_addendum_only_in_phase_two_of_two_phase_conditions():
    task = get_task("sorting")
    inst = task.generate(3, 2, 0, mode="asc")
    v2 = task.view(inst, 1, phase=2, previous=[11, 12])
    camoc2 = task.build_prompt(v2, "broadcast", "camoc")
    assert "second attempt" in camoc2 and camoc2.count("[11, 12]") == 2
    v_none = task.view(inst, 1, phase=2, previous=None)
    assert "you did not submit" in task.build_prompt(v_none, "broadcast", "abl_message")
    assert "second attempt" not in task.build_prompt(task.view(inst, 1), "broadcast", "camoc")
    assert [task.phases(c) for c in CONDITIONS] == [1, 2, 1, 2]


def test_prompt_contains_only_own_data():
    task = get_task("sorting")
    inst = task.generate(3, 4, 0, mode="random")
    prompt = task.build_prompt(task.view(inst, 0), "p2p", "base")
    for other in inst.inputs[1:]:
        assert not any(f" {v}," in prompt or f"[{v}," in prompt for v in other if v not in inst.inputs[0])


# --- helpers written from the docs, independent of prompts.py -------------------------------

TASKS = ["sorting", "max", "prefix_sum"]
PROTOCOLS = ["broadcast", "p2p", "kv"]


def prompt(task_name: str, n: int, k: int, protocol: str, condition: str, agent: int = 0, phase: int = 1,
           seed: int = 0) -> str:
    task = get_task(task_name)
    inst = task.generate(n, k, seed, mode="random")
    previous = [5] * (1 if task_name == "max" else k) if phase == 2 else None
    return task.build_prompt(task.view(inst, agent, phase=phase, previous=previous), protocol, condition)


def example_section(text: str) -> str:
    return text[text.index("Example of a reply"):text.index("How to behave:")]


def documented_camoc_sentences() -> list[tuple[str, str, str]]:
    """(clause id, sentence, principle) rows of the table in docs/tasks/masbench.md."""
    rows = []
    for line in (ROOT / "docs" / "tasks" / "masbench.md").read_text().splitlines():
        m = re.match(r"\| `(\w+)` \| (.+?) \| ([\w-]+) \| .+\|$", line)
        if m:
            rows.append((m.group(1), m.group(2), m.group(3)))
    return rows


def numbered_items(text: str) -> list[str]:
    """Behaviour-list lines with their numbers taken off (numbering shifts when clauses are inserted)."""
    block = text[text.index("How to behave:"):]
    return [re.sub(r"^\d+\. ", "", line) for line in block.splitlines()]


# --- (a) CAMOC: the documented clauses, and nothing else, separate the conditions -----------

def test_documented_clause_table_matches_the_prompt_data():
    spec = yaml.safe_load((PROMPTS / "behavior.yaml").read_text())
    from_yaml = [(c["id"], s["text"], s["principle"]) for c in spec["camoc_clauses"] for s in c["sentences"]]
    documented = documented_camoc_sentences()
    assert documented == from_yaml and len(documented) >= 3
    assert {p for _, _, p in documented} == {"collaboration-awareness", "global-metadata", "one-shot-commitment"}


@pytest.mark.parametrize("task_name", TASKS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("n", [2, 3, 7])
def test_camoc_minus_base_is_exactly_the_documented_sentences(task_name, protocol, n):
    base = numbered_items(prompt(task_name, n, 4, protocol, "base"))
    camoc = numbered_items(prompt(task_name, n, 4, protocol, "camoc"))
    added = [l[2:] for l in difflib.ndiff(base, camoc) if l.startswith("+ ")]
    removed = [l[2:] for l in difflib.ndiff(base, camoc) if l.startswith("- ")]
    spec = yaml.safe_load((PROMPTS / "behavior.yaml").read_text())
    titles = {c["id"]: c["title"] for c in spec["camoc_clauses"]}
    expected: dict[str, list[str]] = {}
    for clause, sentence, _ in documented_camoc_sentences():
        expected.setdefault(clause, []).append(sentence)
    assert added == [f"{titles[c]}. {' '.join(s)}" for c, s in expected.items()]
    assert removed == ["   - what you expect the other agents to do next"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("n", [1, 2, 5])
def test_conditions_differ_only_in_behaviour_list_and_rerun_lines(protocol, n):
    rng = random.Random(n)
    for task_name in TASKS:
        k, seed = rng.randint(1, 6), rng.randint(0, 10**6)
        for phase in (1, 2):
            conds = ["base", "abl_submit"] if phase == 1 else ["abl_message", "camoc"]
            texts = {c: prompt(task_name, n, k, protocol, c, agent=n - 1, phase=phase, seed=seed) for c in conds}
            before = {c: t[:t.index("How to behave:")] for c, t in texts.items()}
            assert len(set(before.values())) == 1, (task_name, phase)
            # after the list: nothing in phase 1, the same rerun suffix in phase 2
            after = {c: t[t.index("How to behave:"):].split("\n\n", 1)[1:] for c, t in texts.items()}
            assert len({tuple(a) for a in after.values()}) == 1
            assert (after[conds[0]] == []) == (phase == 1)
        # phase 1 of the two-phase conditions is the one-phase prompt
        assert prompt(task_name, n, k, protocol, "abl_message", seed=seed) == prompt(task_name, n, k, protocol, "base", seed=seed)
        assert prompt(task_name, n, k, protocol, "camoc", seed=seed) == prompt(task_name, n, k, protocol, "abl_submit", seed=seed)


# --- (b) the example reply is neutral and consistent with N and K ----------------------------

REQUEST = re.compile(r"please|send me|share|\?|what you hold|your list|need|ask", re.I)


@pytest.mark.parametrize("condition", CONDITIONS)
def test_example_reply_is_neutral_and_consistent_with_n_and_k(condition):
    rng = random.Random(condition)
    for _ in range(60):
        task_name, protocol = rng.choice(TASKS), rng.choice(PROTOCOLS)
        n, k = rng.randint(1, 12), rng.randint(1, 15)
        agent = rng.randrange(n)
        text = prompt(task_name, n, k, protocol, condition, agent=agent, seed=rng.randint(0, 999))
        example = example_section(text)
        assert not REQUEST.search(example.split("\n", 1)[1]), example
        # every list in the example is K integers; every agent it names exists and is not the reader
        lists = [[int(v) for v in m.split(",")] for m in re.findall(r"\[([\d, ]+)\]", example)]
        assert all(len(l) == k for l in lists)
        assert all(int(j) < n for j in re.findall(r"Agent-(\d+)", text))
        for j in re.findall(r"send_message (\d+) ", text):
            assert int(j) < n and int(j) != agent
        # submit_result's example answer has the task's answer length and shape
        answer = [int(v) for v in re.search(r"e\.g\. submit_result \[([\d, ]+)\]", text).group(1).split(",")]
        if task_name == "max":
            assert len(answer) == 1
        elif task_name == "sorting":
            assert len(answer) == k and answer == sorted(answer)
        else:
            assert len(answer) == k and all(b > a for a, b in zip(answer, answer[1:]))


def test_base_prompt_asks_for_nothing_outside_the_camoc_clauses():
    """The collaboration-aware request (4.2) appears in CAMOC's clause only."""
    for protocol in PROTOCOLS:
        base = prompt("sorting", 4, 3, protocol, "base")
        camoc = prompt("sorting", 4, 3, protocol, "camoc")
        assert "please" not in base.lower() and "send me" not in base.lower()
        assert camoc.lower().count("please send me yours") == 1


# --- (c) one agent -----------------------------------------------------------------------------

SOLO_FORBIDDEN = re.compile(
    r"\balone\b|\bother agents?\b|\bothers\b|\banother\b|\beveryone\b|\beverybody\b|\bgroup\b|\bnobody\b|"
    r"\bagents\b|\btogether\b|\brequests?\b|Agent-[1-9]|Agent-\d\d|not your own list", re.I)


@pytest.mark.parametrize("task_name", TASKS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize(("condition", "phase"), [(c, 1) for c in CONDITIONS] + [("abl_message", 2), ("camoc", 2)])
def test_one_agent_prompt_names_no_other_agent_and_allows_its_sorted_list(task_name, protocol, condition, phase):
    k = 5
    text = prompt(task_name, 1, k, protocol, condition, phase=phase)
    assert not SOLO_FORBIDDEN.search(text), SOLO_FORBIDDEN.search(text)
    # the same commands are documented as for a group (the tool list does not change with N)
    group = prompt(task_name, 3, k, protocol, condition, phase=phase)
    verbs = re.compile(r"^- (\w+)", re.M)
    assert verbs.findall(text) == verbs.findall(group) != []
    # the reference function in the prompt accepts the agent's own list, sorted / reduced
    own = [int(v) for v in re.search(r"hold a list of \d+ integers:\n\[([\d, ]+)\]", text).group(1).split(",")]
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    scope: dict = {}
    exec(code, scope)
    check = scope["check_results"]
    right = {"sorting": sorted(own), "max": [max(own)], "prefix_sum": [sum(own[:i + 1]) for i in range(k)]}[task_name]
    args = ([own], [right], k) if task_name == "sorting" else ([own], [right])
    assert check(*args)


def test_a_solo_sentence_that_no_longer_matches_its_command_file_is_an_error(tmp_path, monkeypatch):

    from masgrid._private import resources
    from tests.support.conf_copy import copy_all_conf

    copy = tmp_path / "conf"
    copy_all_conf(copy)
    path = copy / "prompts" / "masbench" / "commands_kv.txt"
    path.write_text(path.read_text().replace("all agents read and write", "every agent reads and writes"))
    monkeypatch.setenv("MASGRID_CONF", str(copy))
    resources.reload()
    try:
        assert "every agent reads and writes" in prompt("sorting", 2, 2, "kv", "base")  # groups are unaffected
        with pytest.raises(ValueError, match="solo.yaml: commands_kv.txt no longer contains"):
            prompt("sorting", 1, 2, "kv", "base")
    finally:
        monkeypatch.delenv("MASGRID_CONF")
        resources.reload()
