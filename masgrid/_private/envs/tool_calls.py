"""Tool calls as data, shared by the backends, the scripted policies and the tasks that offer tools.

A model's request to run a tool becomes a `ToolCall`. A call the harness cannot run as
asked (arguments that are not JSON, JSON that is not an object, a tool nobody offered, a
fenced block that is not a call) is still a `ToolCall`, with `error` saying why in one
line: the scheduler answers it with that error as the tool's result, and the run goes on.
No malformed call raises.

The fenced text format (`model.tool_mode=fenced`, for servers without tool parsing) is
defined here, because the same rendering also shows native calls in recorded replies:

    ```tool
    {"name": "<tool>", "arguments": {<the arguments as a JSON object>}}
    ```

One block per call; several blocks in one reply are several calls, in order. The opening
line is exactly ```tool, the closing fence stands at the end of a line. A JSON string cannot
hold a raw line break, so a closing fence can never hide inside a well-formed call.
This module is pure (no masgrid imports outside envs), so envs code may use it too.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal
from collections.abc import Collection

from pydantic import BaseModel, ConfigDict, Field, ValidationError

#: tool names as OpenAI function tools allow them
TOOL_NAME = r"^[A-Za-z0-9_-]{1,64}$"
FENCE_TAG = "tool"
#: a well-formed block: ```tool on its own line, the body, a closing ``` at the end of a line
#: (the body never spans another opening line: an unclosed block does not swallow the next one)
_BLOCK = re.compile(r"^[ \t]*```tool[ \t]*\r?\n((?:(?!^[ \t]*```tool[ \t]*\r?$).)*?)```[ \t]*\r?$",
                    re.DOTALL | re.MULTILINE)
_OPENING = re.compile(r"^[ \t]*```tool[ \t]*\r?$", re.MULTILINE)
_NAME_HINT = re.compile(r'"name"\s*:\s*"([^"\\]{1,64})"')
#: characters of a malformed argument string quoted in an error
ERROR_EXCERPT = 80


class ToolCall(BaseModel):
    """One call a reply asked for. `arguments` is the parsed JSON object, or None when
    `error` says why the call cannot run; `raw_arguments` is the arguments as the model
    wrote them (for the record and for replaying the history)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    name: str
    arguments: dict[str, Any] | None = None
    raw_arguments: str = ""
    error: str | None = None

    @classmethod
    def of(cls, name: str, arguments: Any, id: str = "") -> ToolCall:
        """A call a scripted policy makes (the backend checks it and assigns the id)."""
        return cls(id=id, name=name, arguments=arguments if isinstance(arguments, dict) else None,
                   raw_arguments=json.dumps(arguments))


class ToolReply(BaseModel):
    """What a scripted policy returns instead of a text reply when it calls tools.

    `ScriptedPolicy.act` may return this; the scripted backend (and the CPU stand-in)
    turn it into a completion whose `tool_calls` went through the same checks as a
    model's (unknown tool, arguments not an object)."""

    model_config = ConfigDict(extra="forbid")

    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)


class FunctionSpec(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str = Field(pattern=TOOL_NAME)
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=dict)


class ToolSpec(BaseModel):
    """An OpenAI function tool, as sent in a request's `tools`."""

    model_config = ConfigDict(extra="allow")

    type: Literal["function"]
    function: FunctionSpec


class ToolSpecError(ValueError):
    """The tools offered are not OpenAI function tools (a caller's bug: one line)."""


def tool_specs(tools: list[dict[str, Any]]) -> list[ToolSpec]:
    """The offered tools, validated; a bad list raises one line naming the entry."""
    if not isinstance(tools, list):
        raise ToolSpecError(f"tools must be a list of OpenAI function tools, got {type(tools).__name__}")
    specs: list[ToolSpec] = []
    for k, tool in enumerate(tools):
        try:
            specs.append(ToolSpec.model_validate(tool))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "entry"
            raise ToolSpecError(f"tools[{k}].{where}: {first['msg']}") from None
    names = [s.function.name for s in specs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ToolSpecError(f"tools offered twice: {', '.join(dupes)}")
    return specs


def tool_names(tools: list[dict[str, Any]] | None) -> list[str]:
    return [] if not tools else [s.function.name for s in tool_specs(tools)]


def _excerpt(text: str) -> str:
    """The start of what the model wrote, on one line (errors are one line)."""
    text = text.replace("\r", "\\r").replace("\n", "\\n")
    return text if len(text) <= ERROR_EXCERPT else text[:ERROR_EXCERPT - 3] + "..."


def checked_call(id: str, name: str, raw_arguments: str | dict[str, Any], offered: Collection[str]) -> ToolCall:
    """A call as the harness can run it, or with `error` set. Both problems are named when
    both occur (an unknown tool with unreadable arguments). An empty argument string means
    no arguments ({}), as some servers send for tools without parameters."""
    problems: list[str] = []
    if name not in offered:
        known = ", ".join(sorted(offered)) or "none"
        problems.append(f"unknown tool {name!r} (tools offered: {known})")
    arguments: dict[str, Any] | None = None
    if isinstance(raw_arguments, dict):  # some servers send the object itself
        arguments, raw = raw_arguments, json.dumps(raw_arguments)
    else:
        raw = raw_arguments
        try:
            value = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            problems.append(f"arguments are not valid JSON ({exc.msg} at char {exc.pos}): {_excerpt(raw)}")
        else:
            if isinstance(value, dict):
                arguments = value
            else:
                problems.append(f"arguments must be a JSON object, got {type(value).__name__}: {_excerpt(raw)}")
    if arguments is not None and problems:
        arguments = None  # a call with an error never runs
    return ToolCall(id=id, name=name, arguments=arguments, raw_arguments=raw,
                    error="; ".join(problems) if problems else None)


def call_id(turn: int, k: int) -> str:
    """Ids for calls that came without one (fenced text, scripted policies, servers that omit
    them): unique within a history, and the same on a replay."""
    return f"call_{turn}_{k}"


def render_block(call: ToolCall) -> str:
    """One call in the fenced format. The arguments appear as written: a malformed call is
    shown as the model made it, so the record tells what went wrong."""
    raw = call.raw_arguments if call.raw_arguments.strip() else "{}"
    try:
        json.loads(raw)
        body = f'{{"name": {json.dumps(call.name)}, "arguments": {raw}}}'
    except ValueError:  # not JSON: quoted, so the block still reads as one value
        body = f'{{"name": {json.dumps(call.name)}, "arguments": {json.dumps(raw)}}}'
    return f"```{FENCE_TAG}\n{body}\n```"


def with_calls(text: str | None, calls: list[ToolCall] | None) -> str | None:
    """A reply's text followed by its calls in the fenced format (None stays None: a failed
    call has no text). Used for recorded replies and for prompt token estimates."""
    if not calls:
        return text
    blocks = "\n".join(render_block(c) for c in calls)
    return f"{text}\n{blocks}" if text else blocks


def has_blocks(text: str) -> bool:
    return _OPENING.search(text) is not None


def parse_blocks(text: str, offered: Collection[str], turn: int) -> list[ToolCall]:
    """Every ```tool block of a reply as a call, in order; an opened block that is never
    closed is one call with an error (a reply cut off by max_tokens usually)."""
    calls: list[ToolCall] = []
    covered: list[tuple[int, int]] = []
    for match in _BLOCK.finditer(text):
        covered.append(match.span())
        calls.append(_block_call(match.group(1), offered, call_id(turn, len(calls))))
    for opening in _OPENING.finditer(text):
        if not any(start <= opening.start() < end for start, end in covered):
            rest = text[opening.end():].strip()
            hint = _NAME_HINT.search(rest)
            calls.append(ToolCall(id=call_id(turn, len(calls)), name=hint.group(1) if hint else "",
                                  raw_arguments=rest, error="a ```tool block was opened but never closed"))
    return calls


def _block_call(body: str, offered: Collection[str], id: str) -> ToolCall:
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        hint = _NAME_HINT.search(body)
        return ToolCall(id=id, name=hint.group(1) if hint else "", raw_arguments=body.strip(),
                        error=f"the tool block is not valid JSON ({exc.msg} at char {exc.pos})")
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return ToolCall(id=id, name="", raw_arguments=body.strip(),
                        error='the tool block must be a JSON object with a string "name"')
    arguments = value.get("arguments", {})
    extra = sorted(set(value) - {"name", "arguments"})
    call = checked_call(id, value["name"], arguments if isinstance(arguments, dict) else json.dumps(arguments),
                        offered)
    if extra and call.error is None:
        return call.model_copy(update={"arguments": None, "error": f"unexpected keys in the tool block: "
                                                                    f"{', '.join(extra)} (only name, arguments)"})
    return call
