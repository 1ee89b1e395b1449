"""Tool calls in the chat backends: reading them from replies, keeping them in histories,
counting their tokens, and the fenced-text mode for servers without tool parsing.

`native` (default): the request carries `tools`; the reply's `message.tool_calls` (OpenAI
format) become `ToolCall`s, each checked against the tools offered (envs/tool_calls.py).
`fenced`: the backend is wrapped in `FencedTools`, which describes the tools at the end of
the system message, sends the history as plain text (assistant calls as ```tool blocks,
tool results as user messages) and reads the calls from the reply's ```tool blocks.

History entries after a tool-calling turn (`assistant_turn`): the assistant message with
`tool_calls` as OpenAI sends them. A call whose arguments are not a JSON object is kept with
`{}` as its arguments string: vLLM parses the arguments of every past call with json.loads
to render its chat template (an error there fails the whole request, and every later one of
the conversation), and templates that iterate over the arguments need an object. The model still
learns what went wrong from the tool result the scheduler sends back (its error), and the
events keep the arguments as written (`Completion.tool_calls[*].raw_arguments`).
"""

from __future__ import annotations

import json
import re
from typing import Any
from collections.abc import Collection

from masgrid._private.actors.backends.base import ChatBackend, Completion, Message
from masgrid._private.envs.tokens import TokenCounter
from masgrid._private.envs.tool_calls import (ToolCall, call_id, checked_call, has_blocks, parse_blocks, render_block,
                                     tool_names, tool_specs, with_calls)


class MalformedToolCalls(ValueError):
    """`message.tool_calls` is not a list: the reply is not a chat completion."""


def message_text(message: Message) -> str:
    """What of a history message a token counter counts: its text (content parts joined)
    and, for an assistant turn that called tools, each call's name and arguments."""
    content = message.get("content")
    if isinstance(content, list):  # content parts: only the text parts carry tokens we can count
        text = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    else:
        text = "" if content is None else str(content)
    for call in message.get("tool_calls") or ():
        function = _function(call)
        text += f"\n{function.get('name', '')} {function.get('arguments', '')}"
    return text


def _function(call: Any) -> dict[str, Any]:
    """The `function` object of an OpenAI tool call ({} when the entry has none)."""
    function = call.get("function") if isinstance(call, dict) else None
    return function if isinstance(function, dict) else {}


def tools_text(tools: list[dict[str, Any]] | None) -> str:
    """The tool specs as a server bills them: part of the prompt (counted once per call)."""
    return json.dumps(tools, sort_keys=True) if tools else ""


def prompt_tokens(messages: list[Message], tools: list[dict[str, Any]] | None, count: TokenCounter) -> int:
    """Estimated prompt tokens of a request, for servers that report no usage."""
    return sum(count(message_text(m)) for m in messages) + (count(tools_text(tools)) if tools else 0)


def turn_of(messages: list[Message]) -> int:
    """The number of assistant turns so far: the reply being made is turn number this."""
    return sum(m.get("role") == "assistant" for m in messages)


def read_tool_calls(raw: Any, offered: Collection[str], turn: int) -> list[ToolCall] | None:
    """`message.tool_calls` of a reply as checked calls (None when it made none). A broken
    entry is one call with an error; a value that is not a list raises MalformedToolCalls."""
    if raw is None or raw == []:
        return None
    if not isinstance(raw, list):
        raise MalformedToolCalls(f"choices.0.message.tool_calls is a {type(raw).__name__}, not a list")
    calls: list[ToolCall] = []
    for k, entry in enumerate(raw):
        given = entry.get("id") if isinstance(entry, dict) else None
        cid = given if isinstance(given, str) and given else call_id(turn, k)
        function = _function(entry)
        name = function.get("name")
        if not isinstance(name, str):
            calls.append(ToolCall(id=cid, name="", raw_arguments=json.dumps(entry, default=str)[:2000],
                                  error="the tool call has no function name (not an OpenAI tool call)"))
            continue
        arguments = function.get("arguments")
        if arguments is None:
            arguments = ""
        elif not isinstance(arguments, (str, dict)):
            arguments = json.dumps(arguments)  # e.g. a list: reported as not an object
        calls.append(checked_call(cid, name, arguments, offered))
    return calls


def assistant_turn(completion: Completion) -> Message:
    """The history entry of a reply (a failed call leaves an empty assistant turn)."""
    turn: Message = {"role": "assistant", "content": completion.text or ""}
    if completion.tool_calls:
        turn["tool_calls"] = [{"id": c.id, "type": "function",
                               "function": {"name": c.name, "arguments": _replayable(c.raw_arguments)}}
                              for c in completion.tool_calls]
    return turn


def _replayable(raw: str) -> str:
    """Arguments a server can render in a later prompt: the JSON object as written, else
    `{}` (see the module docstring)."""
    try:
        return raw if isinstance(json.loads(raw), dict) else "{}"
    except ValueError:
        return "{}"


# --- fenced mode -------------------------------------------------------------------------

FENCED_INTRO = """\
# Tools

You act by calling tools. To call one, write a block that opens with a line holding only
```tool, then one JSON object with the tool's "name" and its "arguments" (a JSON object
matching the tool's parameters), then a closing ``` line:

```tool
{"name": "TOOL_NAME", "arguments": {"PARAMETER": "VALUE"}}
```

Each block is one call. Several blocks in one reply run in the order written. Inside the
JSON, write line breaks in strings as \\n. The result of each call comes back to you in the
next message. A reply without any block calls no tool.

The tools you can call:
"""


def result_header(call_id: str, name: str) -> str:
    """The first line of a tool result sent as a user message in fenced mode."""
    return f"Result of tool call {call_id} ({name}):"


_RESULT_HEADER = re.compile(r"\AResult of tool call \S+ \([^)\n]*\):\n")


def fenced_result(content: str) -> str | None:
    """The tool result inside a fenced-mode user message (None: not a tool result). The CPU
    stand-in hands it to its policy bare, as the scripted backend does."""
    match = _RESULT_HEADER.match(content)
    return content[match.end():] if match else None


def fenced_instructions(tools: list[dict[str, Any]]) -> str:
    """The tools described in our own words, for the end of the system message."""
    lines = [FENCED_INTRO]
    for spec in tool_specs(tools):
        f = spec.function
        lines.append(f"## {f.name}\n{f.description.strip() or '(no description)'}\n"
                     f"Parameters (JSON schema): {json.dumps(f.parameters, sort_keys=True)}\n")
    return "\n".join(lines).rstrip() + "\n"


def fenced_messages(messages: list[Message], tools: list[dict[str, Any]] | None) -> list[Message]:
    """The history as plain chat messages: the tool description joins the system message,
    past calls become ```tool blocks (unless the reply text already holds them, as a fenced
    reply does), tool results become user messages naming their call."""
    names: dict[str, str] = {}
    out: list[Message] = []
    for m in messages:
        role = m.get("role")
        if role == "assistant" and m.get("tool_calls"):
            calls = [ToolCall(id=str(c.get("id", "")) if isinstance(c, dict) else "",
                              name=str(_function(c).get("name", "")),
                              raw_arguments=str(_function(c).get("arguments", "")))
                     for c in m["tool_calls"]]
            names.update((c.id, c.name) for c in calls)
            text = str(m.get("content") or "")
            out.append({"role": "assistant",
                        "content": text if has_blocks(text) else with_calls(text, calls)})
        elif role == "tool":
            cid = str(m.get("tool_call_id", ""))
            out.append({"role": "user", "content": f"{result_header(cid, names.get(cid, 'unknown tool'))}\n"
                                                   f"{m.get('content') or ''}"})
        else:
            out.append(m)
    if tools:
        guide = fenced_instructions(tools)
        if out and out[0].get("role") == "system":
            out[0] = {"role": "system", "content": f"{out[0].get('content') or ''}\n\n{guide}"}
        else:
            out.insert(0, {"role": "system", "content": guide})
    return out


class FencedTools(ChatBackend):
    """`model.tool_mode=fenced`: tools offered and read as text through any chat backend."""

    def __init__(self, inner: ChatBackend) -> None:
        self.inner = inner

    async def complete(self, messages: list[Message], tools: list[dict[str, Any]] | None = None) -> Completion:
        completion = await self.inner.complete(fenced_messages(messages, tools))
        if completion.error is not None or not completion.text:
            return completion
        calls = parse_blocks(completion.text, tool_names(tools), turn_of(messages))
        return completion.model_copy(update={"tool_calls": calls or None})

    async def close(self) -> None:
        await self.inner.close()


__all__ = ["FencedTools", "MalformedToolCalls", "assistant_turn", "fenced_messages", "message_text",
           "prompt_tokens", "read_tool_calls", "render_block", "with_calls"]
