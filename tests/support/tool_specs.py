"""Tool specs and fenced blocks written by hand for the tool-call tests."""

from __future__ import annotations

import json


def tool(name: str, description: str, **properties: str) -> dict:
    """An OpenAI function tool whose parameters are all required, typed as given."""
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": {p: {"type": t} for p, t in properties.items()},
                       "required": list(properties)}}}


TOOLS = [tool("view", "Show a file with line numbers.", path="string"),
         tool("bash", "Run a shell command.", command="string"),
         tool("finish", "Say the work is done.", summary="string")]


def block(name: str, arguments) -> str:
    """A ```tool block as a model would write it (`arguments` as JSON text, or a value)."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return f'```tool\n{{"name": "{name}", "arguments": {args}}}\n```'
