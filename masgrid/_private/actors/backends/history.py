"""An agent's chat history that remembers each message's JSON encoding.

A request carries the whole history, so encoding it afresh on every call costs time that
grows with the conversation (in a 16-round AgentsNet run, JSON encoding was a seventh of
the harness's CPU). Histories only grow at the end and their messages are never changed in
place, so each message is encoded once, when a request first carries it; a request body
then joins the stored pieces. The pieces are exactly `json.dumps(message)` (the encoding
aiohttp's `json=` uses), so the bytes on the wire are the same as before.
"""

from __future__ import annotations

import json
from typing import Any
from collections.abc import Sequence

Message = dict[str, Any]


class ChatHistory(list):
    """A list of chat messages, append-only by contract, with an encoding cache."""

    __slots__ = ("_encoded",)

    def __init__(self, messages: Sequence[Message] = ()) -> None:
        super().__init__(messages)
        self._encoded: list[bytes] = []

    def encoded(self) -> list[bytes]:
        """Each message as JSON bytes; only messages added since the last call are encoded.
        A history cut shorter than what was encoded (never done by masgrid) starts over."""
        done = self._encoded
        if len(done) > len(self):
            done.clear()
        for message in self[len(done):]:
            done.append(json.dumps(message).encode())
        return done


def message_pieces(messages: Sequence[Message]) -> list[bytes]:
    """JSON bytes per message, from the cache when the messages are a ChatHistory."""
    if isinstance(messages, ChatHistory):
        return messages.encoded()
    return [json.dumps(m).encode() for m in messages]


def encode_request(body: dict[str, Any], messages: Sequence[Message]) -> bytes:
    """The JSON request body: `body`'s fields (a chat request always has `model`) with
    `messages` spliced in from the per-message pieces."""
    head = json.dumps({k: v for k, v in body.items() if k != "messages"}).encode()
    if head == b"{}":
        return b'{"messages": [' + b", ".join(message_pieces(messages)) + b"]}"
    return head[:-1] + b', "messages": [' + b", ".join(message_pieces(messages)) + b"]}"
