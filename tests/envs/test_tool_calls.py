"""Tool-call checks and the fenced ```tool format, against a reference written here from
the format's documentation (a line scanner, not the module's regular expressions), on
many random replies."""

from __future__ import annotations

import json
import random

import pytest

from masgrid._private.envs.tool_calls import (ToolCall, ToolSpecError, checked_call, parse_blocks, render_block, tool_names,
                                     with_calls)

OFFERED = ["view", "bash", "str_replace", "finish"]
NAMES = OFFERED + ["rm_rf", "View", "send-message"]


def spec(name: str) -> dict:
    return {"type": "function", "function": {"name": name, "description": f"the {name} tool",
                                             "parameters": {"type": "object", "properties": {}}}}


def random_value(rng: random.Random, depth: int = 0):
    kinds = ["int", "str", "null", "bool"] + (["list", "dict"] if depth < 2 else [])
    kind = rng.choice(kinds)
    if kind == "int":
        return rng.randint(-5, 500)
    if kind == "str":
        return rng.choice(["x", "a b", "line1\nline2", "```", "quote \" here", "tab\t", "é", "```tool"])
    if kind == "null":
        return None
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "list":
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(["path", "command", "old", "new", "n"]): random_value(rng, depth + 1)
            for _ in range(rng.randint(0, 3))}


def random_arguments(rng: random.Random) -> str:
    """A JSON object (most often), another JSON value, a broken string, or empty."""
    roll = rng.random()
    if roll < 0.5:
        return json.dumps(random_value(rng, 1) if rng.random() < 0.2 else
                          {"path": f"src/{rng.randint(0, 9)}.py", "n": rng.randint(0, 99)})
    if roll < 0.7:
        return json.dumps(random_value(rng))
    if roll < 0.9:
        text = json.dumps({"command": "ls -la", "x": [1, 2]})
        return text[: rng.randint(1, len(text) - 1)]  # cut short: usually not JSON
    if roll < 0.95:
        return '{"command": "printf \'a\nb\'"}'  # a raw line break inside a string: not JSON
    return rng.choice(["", "   "])


def expected_check(name: str, raw: str) -> tuple[set[str], dict | None]:
    """The documented rules: unknown names and non-object or non-JSON arguments are errors;
    empty arguments mean {}."""
    problems = set()
    if name not in OFFERED:
        problems.add("unknown tool")
    value: object = {}
    if raw.strip():
        try:
            value = json.loads(raw)
        except ValueError:
            problems.add("not valid JSON")
    if "not valid JSON" not in problems and not isinstance(value, dict):
        problems.add("must be a JSON object")
    return problems, (value if not problems else None)


def test_checked_call_on_random_calls():
    rng = random.Random(1)
    for _ in range(2000):
        name, raw = rng.choice(NAMES), random_arguments(rng)
        call = checked_call("c1", name, raw, OFFERED)
        problems, arguments = expected_check(name, raw)
        found = {p for p in ("unknown tool", "not valid JSON", "must be a JSON object") if p in (call.error or "")}
        assert found == problems, (name, raw, call.error)
        assert call.arguments == arguments and call.raw_arguments == raw and call.name == name
        assert (call.error is None) == (not problems)
        if call.error:
            assert "\n" not in call.error  # one line


def test_arguments_sent_as_an_object_are_accepted():
    call = checked_call("c", "view", {"path": "a.py"}, OFFERED)
    assert call.arguments == {"path": "a.py"} and json.loads(call.raw_arguments) == {"path": "a.py"}


# --- the fenced format ---------------------------------------------------------------


def reference_blocks(text: str) -> list[tuple[str, str]]:
    """('block', body) per closed block and ('unclosed', rest) per block never closed, by
    scanning lines: an opening is a line that is ```tool (spaces around allowed); a block
    closes on the first line ending in ``` (the body is everything before that fence); an
    opening line inside a block means the block before it was never closed."""
    out: list[tuple[str, str]] = []
    lines = text.split("\n")
    body: list[str] | None = None
    start_rest = 0
    for n, line in enumerate(lines):
        bare = line.rstrip("\r")
        if bare.strip(" \t") == "```tool":
            if body is not None:
                out.append(("unclosed", "\n".join(lines[start_rest:n])))
            body, start_rest = [], n + 1
            continue
        if body is not None:
            stripped = bare.rstrip(" \t")
            if stripped.endswith("```"):
                body.append(stripped[:-3])
                out.append(("block", "\n".join(body)))
                body = None
            else:
                body.append(line)
    if body is not None:
        out.append(("unclosed", "\n".join(lines[start_rest:])))
    return out


def reference_call(kind: str, body: str) -> tuple[str | None, dict | None, str | None]:
    """(name, arguments, error kind) of one block, from the documented format."""
    if kind == "unclosed":
        return None, None, "never closed"
    try:
        value = json.loads(body)
    except ValueError:
        return None, None, "not valid JSON"
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return "", None, 'string "name"'
    arguments = value.get("arguments", {})
    problems, args = expected_check(value["name"], json.dumps(arguments))
    if problems:
        return value["name"], None, sorted(problems)[0]
    if set(value) - {"name", "arguments"}:
        return value["name"], None, "unexpected keys"
    return value["name"], args, None


def random_block(rng: random.Random) -> str:
    roll = rng.random()
    name = rng.choice(NAMES)
    if roll < 0.55:
        arguments = random_value(rng, 1) if rng.random() < 0.15 else {"path": "a.py", "text": random_value(rng)}
        obj = {"name": name, "arguments": arguments}
        if rng.random() < 0.1:
            obj["why"] = "extra"
        if rng.random() < 0.1:
            del obj["arguments"]
        body = json.dumps(obj, indent=rng.choice([None, 2]))
    elif roll < 0.7:
        body = json.dumps({"name": name, "arguments": {"command": "ls"}})[:-2]  # broken JSON
    elif roll < 0.8:
        body = json.dumps(rng.choice([[name], {"tool": name}, {"name": 3, "arguments": {}}]))
    else:
        body = json.dumps({"name": name, "arguments": {"s": "x"}})
    closing = rng.choice(["\n```", "```", "\n```  "])
    return f"```tool\n{body}{closing}"


def random_reply(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(0, 5)):
        roll = rng.random()
        if roll < 0.45:
            parts.append(random_block(rng))
        elif roll < 0.65:
            parts.append(rng.choice(["I will look at the file first.", "Done. `x` is set.", "Plan:\n- a\n- b", ""]))
        elif roll < 0.8:
            parts.append("```python\nprint('```tool')\n```")  # other fences, a quoted opening
        elif roll < 0.85:
            parts.append("  ```tool  \n" + json.dumps({"name": "view", "arguments": {"path": "b"}}) + "\n```")
        elif roll < 0.9:
            parts.append("```tool\n{\"name\": \"view\"")  # opened, never closed, more text follows
        else:
            parts.append("```toolbox\nnot a call\n```")
    if rng.random() < 0.15:
        parts.append("```tool\n{\"name\": \"bash\", \"arguments\": {\"command\": \"make")  # cut off
    return "\n".join(parts)


def test_parse_blocks_matches_a_line_scanner_on_random_replies():
    rng = random.Random(2)
    seen = set()
    for _ in range(1500):
        text = random_reply(rng)
        calls = parse_blocks(text, OFFERED, turn=4)
        expected = [reference_call(kind, body) for kind, body in reference_blocks(text)]
        # the parser reports closed blocks in order, then the unclosed ones
        expected = [e for e in expected if e[2] != "never closed"] + [e for e in expected if e[2] == "never closed"]
        assert len(calls) == len(expected), text
        for k, (call, (name, arguments, error)) in enumerate(zip(calls, expected)):
            assert call.id == f"call_4_{k}"
            assert call.arguments == arguments, (text, call)
            if error is None:
                assert call.error is None and call.name == name, (text, call)
            else:
                assert call.error is not None and error in call.error, (text, call, error)
                assert call.arguments is None
                if name is not None and error != "not valid JSON":
                    assert call.name == name
            seen.add(error)
    # every kind of outcome occurred
    assert {None, "never closed", "not valid JSON", 'string "name"', "unknown tool", "unexpected keys",
            "must be a JSON object"} <= seen


def test_a_rendered_call_parses_back_to_itself():
    rng = random.Random(3)
    for k in range(500):
        name = rng.choice(OFFERED)
        arguments = {"path": f"f{k}.py", "value": random_value(rng)}
        call = checked_call(f"call_0_{k}", name, json.dumps(arguments), OFFERED)
        (back,) = parse_blocks(render_block(call), OFFERED, turn=0)
        assert back.model_dump(exclude={"raw_arguments", "id"}) == call.model_dump(exclude={"raw_arguments", "id"})
        assert json.loads(back.raw_arguments) == arguments


def test_with_calls_shows_malformed_arguments_as_written():
    bad = ToolCall(id="c", name="bash", raw_arguments='{"command": "ls', error="arguments are not valid JSON")
    good = ToolCall(id="d", name="view", arguments={"path": "a"}, raw_arguments='{"path": "a"}')
    text = with_calls("Looking.", [good, bad])
    assert text.startswith("Looking.\n```tool\n")
    assert '"name": "view", "arguments": {"path": "a"}' in text
    assert json.dumps('{"command": "ls') in text  # quoted: the record shows what the model wrote
    assert with_calls(None, None) is None and with_calls("plain", None) == "plain"


def test_bad_tool_specs_are_one_line_errors():
    assert tool_names([spec("view"), spec("bash")]) == ["view", "bash"]
    assert tool_names(None) == []
    with pytest.raises(ToolSpecError, match=r"tools\[1\]\.function\.name"):
        tool_names([spec("view"), spec("no spaces allowed")])
    with pytest.raises(ToolSpecError, match="offered twice: view"):
        tool_names([spec("view"), spec("view")])
    with pytest.raises(ToolSpecError, match=r"tools\[0\]\.type"):
        tool_names([{"function": {"name": "x"}}])
    with pytest.raises(ToolSpecError, match="must be a list"):
        tool_names({"view": 1})  # type: ignore[arg-type]
