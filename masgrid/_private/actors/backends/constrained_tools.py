"""Tool calls from a model that cannot choose them: the engine's structured outputs write one.

A random model never writes a well-formed tool call, and in vLLM 0.32's CPU build neither a
named `tool_choice` nor `"required"` kept the arguments to the tool's schema (bare numbers,
unterminated JSON: shared/engine-facts.md). What does hold is a regular expression the
engine enforces token by token (`structured_outputs.regex`, xgrammar): the reply is made to
be exactly one call in the layout the model's chat template and vLLM's `hermes` tool parser
share, `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`, and the parser turns
it into the response's `tool_calls` as for any model. So the calls still travel vLLM's own
tool-calling path (parser, ids, finish_reason tool_calls); only the choice is forced.

`model.tool_constraint=regex` turns it on (the `tiny_cpu` preset for CooperBench). The
expression covers the schemas masgrid's tools use: an object of required properties,
each a string (short, from a safe alphabet), an enum, an integer, a number or a boolean;
optional properties are left out. A real model is served with its own tool parser
instead (docs/serving.md), and never needs this.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: characters a forced string may hold: no quote, backslash or newline to escape
_SAFE_STRING = r'"[A-Za-z0-9 _./=-]{1,%d}"'
STRING_CHARS = 24


def _lit(text: str) -> str:
    """`text` as a regex literal; only metacharacters are escaped (the engine's regex dialect
    need not know Python's escapes of spaces and quotes)."""
    return re.sub(r"([\\.^$*+?{}\[\]|()])", r"\\\1", text)


def value_pattern(schema: dict[str, Any]) -> str:
    """A regex for one JSON value of `schema` (the subset tools use)."""
    if "enum" in schema:
        return "(" + "|".join(_lit(json.dumps(v)) for v in schema["enum"]) + ")"
    kind = schema.get("type")
    if kind == "string":
        return _SAFE_STRING % min(int(schema.get("maxLength", STRING_CHARS)), STRING_CHARS)
    if kind == "integer":
        return r"(0|[1-9][0-9]{0,3})"
    if kind == "number":
        return r"(0|[1-9][0-9]{0,3})(\.[0-9]{1,2})?"
    if kind == "boolean":
        return "(true|false)"
    if kind == "array":
        return r"\[\]"
    if kind == "object":
        return object_pattern(schema)
    raise ValueError(f"tool_constraint=regex: no pattern for a property of type {kind!r}")


def object_pattern(schema: dict[str, Any]) -> str:
    props = schema.get("properties") or {}
    required = [name for name in props if name in set(schema.get("required") or [])]
    fields = [_lit(json.dumps(name)) + ": " + value_pattern(props[name]) for name in required]
    return r"\{" + ", ".join(fields) + r"\}"


def tool_call_regex(tools: list[dict[str, Any]]) -> str:
    """Exactly one hermes-layout call of one of `tools` (OpenAI function tools)."""
    calls = []
    for tool in tools:
        fn = tool.get("function", tool)
        calls.append(r"\{" + _lit('"name": ' + json.dumps(fn["name"]) + ', "arguments": ')
                     + object_pattern(fn.get("parameters") or {}) + r"\}")
    return r"<tool_call>\n(" + "|".join(calls) + r")\n</tool_call>"


def constrain(body: dict[str, Any], tools: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The request body with the engine told to write one call (when tools are offered)."""
    if tools:
        body["structured_outputs"] = {"regex": tool_call_regex(tools)}
    return body
