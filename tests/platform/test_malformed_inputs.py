"""Issue 12, item 7: every malformed input is refused before any work, as one line.

Generated cases (seeded `random.Random`, so a failure reproduces) go through the real paths:
`RunConfig.from_mapping`, and the `masgrid` command line as a real subprocess
(`python -m masgrid._private.platform.commands.cli`), each answer being one line on stderr, exit status 2 and
no traceback. The subprocess sample is smaller than the in-process one only to bound the
suite's time; both call the same functions.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from masgrid._private.platform.commands.cli import main
from masgrid.family import top_level_keys
from masgrid._private.platform.run.config import ConfigError, RunConfig

AGENTSNET = {"task": "agentsnet/coloring", "protocol": "local", "graph": "ws", "agents": 4}
SILO = {"task": "silo/I-01", "agents": 3}
SORTING = {"task": "sorting", "agents": 3, "k": 2}
BASES = (SORTING, SILO, AGENTSNET)

#: values no integer field takes (JSON text as a user types it on the command line)
NOT_INTEGERS = ("1.5", "1e999", "-1e999", "NaN", '"x"', "true", "[1]", '{"a": 1}', "null")
#: per key: bad values, as JSON text, valid for the key's type checks only where they fail
BAD_VALUES: dict[str, tuple[str, ...]] = {
    "agents": (*NOT_INTEGERS, "0", "-1", "100001"),
    "k": (*NOT_INTEGERS[:-1], "0", "-7", "1000001"),
    "seed": (*NOT_INTEGERS, str(2**63), str(-(2**63) - 1)),
    "condition": ('"heroic"', "7", "[]"),
}
FAMILY_BAD: dict[str, dict[str, tuple[str, ...]]] = {
    "sorting": {"mode": ('"sideways"', "3", "[]", "null")},
    "silo/I-01": {"condition": ('"oracle-x"', '"oracle-"')},
    "agentsnet/coloring": {"graph": ('"nope"', "3", "null"), "agentsnet.rounds": ("0", "-2", "1.5", '"x"'),
                           "agentsnet.byzantine": ('"evil"', "1"), "agentsnet.cot": ('"maybe"', "[]"),
                           "agentsnet.colour": ("1",)},
}


def bad_case(rng: random.Random) -> tuple[dict[str, Any], str, str]:
    """(a config that is valid but for one key, that key, its bad value as JSON text)."""
    base = dict(rng.choice(BASES))
    choices = {**BAD_VALUES, **FAMILY_BAD[base["task"]]}
    if base["task"] == "agentsnet/coloring" and rng.random() < 0.2:  # f impossible for n agents
        n = rng.randint(4, 12)
        base.update(agents=n, agentsnet={"byzantine": rng.choice(["aware", "unaware"])})
        return base, "agentsnet.byzantine_count", str(rng.choice([n, n + rng.randint(1, 99)]))
    if rng.random() < 0.1:
        return base, rng.choice(["colour", "Seed", "graphs", "agent"]), "1"
    key = rng.choice(sorted(choices))
    return base, key, rng.choice(choices[key])


def as_mapping(base: dict[str, Any], key: str, text: str) -> dict[str, Any]:
    data = {**base, "agentsnet": dict(base.get("agentsnet", {}))}
    value = json.loads(text) if text not in ("NaN",) else float("nan")
    if key.startswith("agentsnet."):
        data["agentsnet"][key.split(".", 1)[1]] = value
    else:
        data[key] = value
    if not data["agentsnet"]:
        del data["agentsnet"]
    return data


@pytest.mark.parametrize("seed", range(300))
def test_generated_bad_configs_name_their_field(seed):
    base, key, text = bad_case(random.Random(seed))
    with pytest.raises(ConfigError) as err:
        RunConfig.from_mapping(as_mapping(base, key, text))
    owner = top_level_keys().get(key)  # `mode` is masbench.mode: either name says which field
    named = [f"  {key}:"] + ([f"  {owner.name}.{key}:"] if owner is not None else [])
    assert any(name in str(err.value) for name in named), (key, text, str(err.value))


def test_generated_bad_run_commands_fail_before_ray(tmp_path):
    """`masgrid run key=value` (Hydra's override syntax reads these JSON texts alike)."""
    rng = random.Random(99)
    cases = []
    while len(cases) < 8:
        base, key, text = bad_case(rng)
        if text.startswith("{") or key in ("colour", "Seed", "graphs", "agent", "agentsnet.colour"):
            continue  # Hydra's own refusals (dict syntax, keys not in the schema) are other paths
        words = [f"{k}={v}" for k, v in base.items() if k not in ("agentsnet", key)]
        words += [f"agentsnet.{k}={v}" for k, v in base.get("agentsnet", {}).items()]
        cases.append((key, [*words, f"{key}={text}", f"results_dir={tmp_path / str(len(cases))}"]))
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda case: cli("run", *case[1]), cases))
    for (key, words), out in zip(cases, outs):
        assert out.returncode == 2 and "Traceback" not in out.stderr + out.stdout, (words, out.stderr)
        assert out.stderr.startswith("invalid configuration:\n") and f"\n  {key}:" in out.stderr, (words, out.stderr)
    assert not any(tmp_path.iterdir())  # no results_dir was made, no run started


def test_family_options_are_checked_before_ray(tmp_path):
    """`graph=nope` and an impossible f were failed runs after start-up; now no run starts."""
    for overrides, line in ((["graph=nope"], "graph: unknown graph model 'nope'"),
                            (["agents=4", "agentsnet.byzantine=aware", "agentsnet.byzantine_count=4"],
                             "agentsnet.byzantine_count: need 0 <= f < agents = 4, got 4")):
        out = cli("run", "task=agentsnet/coloring", "protocol=local", "graph=ws", *overrides, f"results_dir={tmp_path}")
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
        assert line in out.stderr
        assert "Ray" not in out.stdout + out.stderr and not (tmp_path / "runs").exists()


# -- identity: keys a family ignores --------------------------------------------------------------

@pytest.mark.parametrize(("base", "key", "values"), [
    (SILO, "mode", ("asc", "desc", None)),
    (SILO, "graph", ("ws", None)),
    (AGENTSNET, "mode", ("asc", None)),
    (AGENTSNET, "k", (1, 7, None)),
    (SORTING, "graph", ("ws", None)),
])
def test_an_ignored_key_is_not_part_of_the_identity(base, key, values):
    cfgs = [RunConfig.from_mapping({**base, key: v}) for v in values]
    assert len({c.run_id for c in cfgs}) == 1
    assert {c.identity()[key] for c in cfgs} == {None}
    assert [c.columns()[key] for c in cfgs][:-1] == list(values)[:-1]  # the row keeps what was asked


def test_the_byzantine_count_is_identity_only_with_byzantine_agents():
    def run_id(setting: str, count: int | None) -> str:
        return RunConfig.from_mapping({**AGENTSNET, "agents": 8,
                                       "agentsnet": {"byzantine": setting, "byzantine_count": count}}).run_id

    assert len({run_id("none", c) for c in (None, 1, 2, 3)}) == 1  # never read without Byzantine agents
    assert len({run_id("aware", c) for c in (1, 2, 3)}) == 3
    assert run_id("none", None) != run_id("aware", 1)


def test_keys_a_family_reads_stay_in_its_identity():
    for base, key, a, b in ((SORTING, "mode", "asc", "desc"), (SORTING, "k", 1, 2), (SILO, "k", 3, 4),
                            (AGENTSNET, "graph", "ws", "ba"), (SILO, "condition", "base", "planning")):
        x, y = RunConfig.from_mapping({**base, key: a}), RunConfig.from_mapping({**base, key: b})
        assert x.run_id != y.run_id and x.identity()[key] == a and y.identity()[key] == b
    # MAS-Bench's identity is what it was: graph (never set) stands as None, as before
    assert RunConfig.from_mapping(SORTING).identity()["graph"] is None


@pytest.mark.parametrize(("args", "line"), [
    (["task=silo/I-01", "mode=asc,desc"], "masgrid run: the sweep varies mode, which task silo/I-01 ignores"),
    (["task=agentsnet/coloring", "protocol=local", "graph=ws", "agents=4", "k=1,2,3"],
     "masgrid run: the sweep varies k, which task agentsnet/coloring ignores"),
    (["task=sorting,silo/I-01", "agents=2", "mode=asc,desc"],  # sorting reads mode: only SILO's jobs collapse
     "masgrid run: the sweep varies mode, which task silo/I-01 ignores"),
])
def test_a_sweep_over_an_ignored_key_is_refused(tmp_path, args, line):
    out = cli("run", "-m", *args, f"results_dir={tmp_path / 'r'}")
    assert one_line(out).startswith(line)
    assert "Vary seed for repeats" in out.stderr
    assert not (tmp_path / "r" / "runs").exists()


# -- masgrid instance / score ---------------------------------------------------------------------

def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "masgrid._private.platform.commands.cli", *args], capture_output=True, text=True,
                          timeout=180)


def one_line(out: subprocess.CompletedProcess | tuple[int, str, str]) -> str:
    rc, stdout, stderr = (out.returncode, out.stdout, out.stderr) if isinstance(out, subprocess.CompletedProcess) else out
    assert "Traceback" not in stdout + stderr, stderr
    assert rc == 2, (rc, stdout, stderr)
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and stdout == "", (stdout, lines)
    return lines[0]


def in_process(capsys, *args: str) -> tuple[int, str, str]:
    try:
        rc = main(list(args))
    except SystemExit as exc:  # argparse
        rc = exc.code  # type: ignore[assignment]
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def bad_instance_args(rng: random.Random) -> tuple[list[str], str]:
    """(`masgrid instance` arguments with one malformed word, a word the error must name)."""
    base, key, text = bad_case(rng)
    given = {k: str(v) for k, v in base.items() if k not in ("task", "protocol", "agentsnet", key)}
    if rng.random() < 0.15:
        word = rng.choice(["novalue", "=3", "agents", "k:3"])
        return [base["task"], *(f"{k}={v}" for k, v in given.items()), word], word.strip("=")
    if key == "agentsnet.byzantine_count":
        given["byzantine"] = base["agentsnet"]["byzantine"]
    name = key.removeprefix("agentsnet.") if rng.random() < 0.5 else key  # bare or dotted family key
    words = [f"{k}={v}" for k, v in given.items()] + [f"{name}={text}"]
    rng.shuffle(words)
    return [base["task"], *words], name.split(".")[-1]


def test_generated_bad_instance_commands_are_one_line(capsys):
    rng = random.Random(12)
    for _ in range(150):
        args, named = bad_instance_args(rng)
        line = one_line(in_process(capsys, "instance", *args))
        assert line.startswith("masgrid instance: ") and named in line, (args, line)


def test_generated_bad_instance_commands_in_a_real_process():
    rng = random.Random(7)
    cases = [bad_instance_args(rng) for _ in range(16)]
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda case: cli("instance", *case[0]), cases))
    for (args, named), out in zip(cases, outs):
        line = one_line(out)
        assert line.startswith("masgrid instance: ") and named in line, (args, line)


def test_instance_takes_family_options_bare_or_dotted(capsys):
    rc, out, _ = in_process(capsys, "instance", "agentsnet/coloring", "agents=8", "graph=ws", "rounds=3",
                            "agentsnet.byzantine=aware", "byzantine_count=2")
    inst = json.loads(out)
    assert rc == 0 and inst["params"]["rounds"] == 3 and len(inst["meta"]["byzantine_agents"]) == 2


@pytest.fixture(scope="module")
def instances(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("instances")
    out = {}
    for base in BASES:
        words = [f"{k}={v}" for k, v in base.items() if k not in ("task", "protocol", "agentsnet")]
        proc = cli("instance", base["task"], *words)
        assert proc.returncode == 0, proc.stderr
        out[base["task"]] = folder / f"{base['task'].replace('/', '_')}.json"
        out[base["task"]].write_text(proc.stdout)
    return out


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def bad_answers(rng: random.Random, n: int) -> tuple[str, str]:
    """(the text of a malformed answers file for an n-agent instance, a word the error names)."""
    kind = rng.randrange(8)
    if kind == 0:  # a negative or out-of-range agent id
        agent = rng.choice([-1, -rng.randint(2, 10**6), n, n + rng.randint(1, 10**6)])
        key = rng.choice([str(agent), f"Agent-{agent}", f"agent-{agent}"])
        return json.dumps({key: None}), key
    if kind == 1:  # not an agent id at all
        key = rng.choice(["colour", "1e3", " 1", "1.0", "Agent-", "Agent-x", "0x1", "", "Agent 1"])
        return json.dumps({key: None}), "not an agent id"
    if kind == 2:  # two keys naming one agent
        agent = rng.randrange(n)
        return json.dumps({str(agent): None, f"Agent-{agent}": None}), f"both name agent {agent}"
    if kind == 3:  # deeply nested, as an answer or as the whole file
        depth = rng.choice([33, 64, 1000, 200_000])
        deep = "[" * depth + "]" * depth
        return rng.choice([deep, json.dumps([nested(min(depth, 900))] + [None] * (n - 1))]), "nested deeper"
    if kind == 4:  # the wrong number of answers
        count = rng.choice([0, n - 1, n + 1, n + rng.randint(2, 50)])
        return json.dumps([None] * count), f"{count} answers"
    if kind == 5:  # an unknown key beside "answers"
        return json.dumps({"answers": [None] * n, rng.choice(["colour", "meta", "Answers"]): 1}), "unknown key"
    if kind == 6:  # not JSON, or JSON of the wrong kind
        text = rng.choice(["", "{", "[1,", "nope", "'single'", "1" * 5000])
        return (text, "not valid JSON") if rng.random() < 0.7 else (rng.choice(["7", '"x"', "true", "null"]),
                                                                    "must be a JSON list")
    return json.dumps({"answers": rng.choice([7, "x", None])}), "must be a JSON list"


def bad_instance(rng: random.Random, good: dict[str, Any]) -> tuple[str, str]:
    """(the text of a malformed instance file, a word the error names)."""
    inst = json.loads(json.dumps(good))
    kind = rng.randrange(6)
    if kind == 0:
        inst[rng.choice(["colour", "Task", "extra"])] = 1
        return json.dumps(inst), "not an instance"
    if kind == 1:
        del inst[rng.choice(["task", "params", "inputs", "expected"])]
        return json.dumps(inst), "not an instance"
    if kind == 2:
        inst[rng.choice(["params", "inputs", "expected", "meta"])] = rng.choice([7, "x", None, True])
        return json.dumps(inst), "not an instance"
    if kind == 3:
        inst["expected"] = inst["expected"][:-1]
        return json.dumps(inst), "one expected answer per agent"
    if kind == 4:
        inst["inputs"], inst["expected"] = [], []
        return json.dumps(inst), "one input"
    return "[" * 100_000 + "]" * 100_000, "nested deeper"


@pytest.mark.parametrize("task", [b["task"] for b in BASES])
def test_generated_bad_score_inputs_are_one_line(tmp_path, capsys, instances, task):
    rng = random.Random(task)
    good = json.loads(instances[task].read_text())
    n = len(good["inputs"])
    (tmp_path / "none.json").write_text(json.dumps([None] * n))
    for i in range(60):
        if i % 3:
            text, named = bad_answers(rng, n)
            inst, ans = instances[task], tmp_path / f"a{i}.json"
        else:
            text, named = bad_instance(rng, good)
            inst, ans = tmp_path / f"i{i}.json", tmp_path / "none.json"
        (ans if i % 3 else inst).write_text(text)
        line = one_line(in_process(capsys, "score", task, "--instance", str(inst), "--answers", str(ans)))
        assert line.startswith("masgrid score: ") and named in line, (text[:200], line)


def test_generated_bad_score_inputs_in_a_real_process(tmp_path, instances):
    rng = random.Random(3)
    cases = []
    for i in range(16):
        base = rng.choice(BASES)
        good = json.loads(instances[base["task"]].read_text())
        text, named = bad_answers(rng, len(good["inputs"]))
        (tmp_path / f"a{i}.json").write_text(text)
        cases.append((["score", base["task"], "--instance", str(instances[base["task"]]), "--answers",
                       str(tmp_path / f"a{i}.json")], named))
    cases.append((["score", "sorting", "--instance", str(tmp_path / "missing.json"), "--answers", "x"],
                  "No such file"))
    cases.append((["score", "sorting", "--answers", "x"], "required: --instance"))
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda case: cli(*case[0]), cases))
    for (args, named), out in zip(cases, outs):
        line = one_line(out)
        assert line.startswith("masgrid score: ") and named in line, (args, line)


def test_junk_inside_an_agent_input_is_one_line_or_a_score(tmp_path, capsys, instances):
    """An instance edited inside: a task's parser may still score it, but never crashes."""
    rng = random.Random(5)
    for task, path in instances.items():
        good = json.loads(path.read_text())
        n = len(good["inputs"])
        for i in range(10):
            inst = json.loads(json.dumps(good))
            agent = rng.randrange(n)
            inst[rng.choice(["inputs", "expected"])][agent] = rng.choice([None, 7, "x", [], {}, [[1]], {"a": [1]}])
            if rng.random() < 0.3:
                inst["meta"] = {}
            (tmp_path / "i.json").write_text(json.dumps(inst))
            (tmp_path / "a.json").write_text(json.dumps(good["expected"]))
            rc, out, err = in_process(capsys, "score", task, "--instance", str(tmp_path / "i.json"),
                                      "--answers", str(tmp_path / "a.json"))
            if rc == 0:
                assert "success" in json.loads(out)
            else:
                assert one_line((rc, out, err)).startswith("masgrid score: ")
