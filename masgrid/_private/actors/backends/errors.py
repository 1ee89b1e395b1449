"""What went wrong with a model call, as a precise class a table can count.

Every backend (openai client, direct aiohttp, Serve handle) reports a failed call through
`CallFailure`, so the events table has one vocabulary for all of them:

| class | meaning |
|---|---|
| `connection_refused` | nothing listens at the endpoint (ECONNREFUSED) |
| `unreachable` | the host cannot be resolved or routed to |
| `connection_error` | the connection broke (reset, closed mid-reply, other transport errors) |
| `timeout` | an attempt outlived `model.timeout_s` |
| `http_429` | rate limited |
| `context_length` | the prompt (or prompt + `max_tokens`) does not fit the model's context: HTTP 400 with vLLM's own words, bare or wrapped by Ray Serve LLM; final, the agent stops |
| `content_filter` | the provider's content filter refused the prompt: HTTP 400 whose error code says so (OpenAI `content_policy_violation`, Azure OpenAI `content_filter` or an `innererror` `ResponsibleAIPolicyViolation`) or whose message names a content policy or filter; not retried (the same prompt is refused again) and not final (the agent's next prompt may pass) |
| `http_4xx` | the server refused the request otherwise (e.g. model not found) |
| `http_5xx` | the server failed |
| `malformed_response` | HTTP 200 but not a usable chat completion (bad JSON, no choices, null content) |
| `backend_error` | anything else raised while calling (a bug or an unexpected library error) |

The classification walks the exception's cause chain: the openai client on its aiohttp
transport reports a refused connection as `APITimeoutError` (wrapping `ConnectTimeout`
around the `ConnectionRefusedError`), which must never be recorded as a timeout.
"""

from __future__ import annotations

import asyncio
import errno
import json
import re
import socket
from typing import Any, Literal

from pydantic import BaseModel

ErrorClass = Literal["connection_refused", "unreachable", "connection_error", "timeout", "http_429",
                     "context_length", "content_filter", "http_4xx", "http_5xx", "malformed_response", "backend_error"]
ERROR_CLASSES: tuple[str, ...] = ErrorClass.__args__  # type: ignore[attr-defined]

#: 4xx statuses that a client retries (request timeout, conflict, rate limit): not final
RETRYABLE_4XX = frozenset({408, 409, 429})
#: what vLLM says when a request cannot fit the context (its serving layer, 0.6 to 0.32):
#: "This model's maximum context length is N tokens. However, your prompt contains ...",
#: "max_tokens=M cannot be greater than max_model_len=N", "... longer than the maximum model
#: length"; Ray Serve LLM wraps the same text in its own ("Message: ... Internal exception: ...")
CONTEXT_PATTERNS = re.compile(
    r"maximum context length|cannot be greater than max_model_len|longer than the maximum model length"
    r"|exceeds the model'?s? (maximum )?context|context length exceeded|context_length_exceeded",
    re.IGNORECASE)
#: error codes providers give a prompt their content filter refused (OpenAI, Azure OpenAI and its
#: innererror): what the filter did is the deployed model's behaviour, like any answer
FILTER_CODES = frozenset({"content_policy_violation", "content_filter", "responsibleaipolicyviolation"})
#: the same refusal in words, for providers that send no code ("violates our content policy",
#: "content management policy", "blocked by the content filter")
FILTER_PATTERNS = re.compile(r"content (management )?polic(y|ies)|content[ -]filter(s|ed|ing)?\b", re.IGNORECASE)
#: error classes that say what the model can do, not that the platform failed: an agent whose
#: history outgrew the context stops, as it would with that model anywhere; a prompt the
#: provider's filter refused is that deployment's answer (platform/run/run_outcome.py)
AGENT_LIMIT_CLASSES = frozenset({"context_length", "content_filter"})
_UNREACHABLE_ERRNOS = frozenset({errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EADDRNOTAVAIL})
MESSAGE_CHARS = 300


class CallFailure(BaseModel):
    """A failed model call: its class, the one-line message recorded, and the HTTP status."""

    error_class: ErrorClass
    message: str
    http_status: int | None = None

    @property
    def final(self) -> bool:
        """A refusal that will not change on another try (e.g. the prompt exceeds the context):
        the agent is not called again in this phase."""
        return (self.error_class == "context_length"
                or self.error_class == "http_4xx" and self.http_status not in RETRYABLE_4XX)

    @property
    def error(self) -> str:
        return f"{self.error_class}: {self.message}"


def http_failure(status: int, body: Any) -> CallFailure:
    """An HTTP error status with the server's own message (OpenAI, vLLM and FastAPI shapes)."""
    cls: ErrorClass = "http_429" if status == 429 else "http_5xx" if status >= 500 else "http_4xx"
    message = server_message(body)
    if status == 400 and CONTEXT_PATTERNS.search(message):
        cls = "context_length"
    elif status == 400 and (FILTER_CODES & error_codes(body) or FILTER_PATTERNS.search(message)):
        cls = "content_filter"
    return CallFailure(error_class=cls, message=f"http {status}: {message}", http_status=status)


def error_reply(data: Any) -> CallFailure | None:
    """An error object where a completion was expected (a Serve handle returns vLLM's
    ErrorResponse instead of raising): {"code": 400, "message"} or {"error": {"code", "message"}}.
    None when `data` is not one."""
    if not isinstance(data, dict) or "choices" in data:
        return None
    error = data.get("error")
    inner = error if isinstance(error, dict) else data
    code = inner.get("code")
    if isinstance(code, int) and code >= 400:
        return http_failure(code, {"error": inner})
    return None


def server_message(body: Any) -> str:
    """The human-readable part of an error body: {"error": {"message"}}, {"message"}, {"detail"}, or the text."""
    body = _parsed(body)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            for key in ("message", "detail", "msg"):
                if inner.get(key):
                    return _short(str(inner[key]))
        elif isinstance(inner, str) and inner:
            return _short(inner)
        if body.get("detail"):
            return _short(str(body["detail"]))
    return _short(json.dumps(body) if not isinstance(body, str) else body)


def error_codes(body: Any) -> set[str]:
    """The error's `code` and its `innererror.code` (Azure), lower-cased; empty when the body has none."""
    body = _parsed(body)
    error = body.get("error", body) if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return set()
    inner = error.get("innererror")
    codes = [error.get("code"), inner.get("code") if isinstance(inner, dict) else None]
    return {c.lower() for c in codes if isinstance(c, str)}


def _parsed(body: Any) -> Any:
    """An error body as JSON when it is JSON, else as text."""
    if isinstance(body, (bytes, bytearray)):
        body = body.decode(errors="replace")
    if isinstance(body, str):
        try:
            return json.loads(body)
        except ValueError:
            return body
    return body


def malformed(detail: str) -> CallFailure:
    return CallFailure(error_class="malformed_response", message=_short(detail))


def classify_exception(exc: BaseException) -> CallFailure:
    """The class of an exception raised by any of the HTTP clients or a Serve handle."""
    chain = _chain(exc)
    for link in chain:
        if isinstance(link, ConnectionRefusedError):
            return CallFailure(error_class="connection_refused", message=_short(str(link)))
    for link in chain:
        if isinstance(link, socket.gaierror) or (isinstance(link, OSError) and link.errno in _UNREACHABLE_ERRNOS):
            return CallFailure(error_class="unreachable", message=_short(str(link)))
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):  # openai.APIStatusError
        response = getattr(exc, "response", None)
        body = getattr(exc, "body", None)
        if body is None and response is not None:
            try:
                body = response.text
            except Exception:  # noqa: BLE001 - an unread body
                body = str(exc)
        return http_failure(status, body if body is not None else str(exc))
    if any(_is_timeout(link) for link in chain):
        return CallFailure(error_class="timeout", message="the call exceeded model.timeout_s")
    if any(_is_connection(link) for link in chain):
        return CallFailure(error_class="connection_error", message=_short(f"{type(exc).__name__}: {exc}"))
    return CallFailure(error_class="backend_error", message=_short(f"{type(exc).__name__}: {exc}"))


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        out.append(link)
        link = link.__cause__ or link.__context__
    return out


def _is_timeout(exc: BaseException) -> bool:
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return True
    return "Timeout" in type(exc).__name__  # openai.APITimeoutError, httpx.*Timeout, aiohttp.ServerTimeoutError


def _is_connection(exc: BaseException) -> bool:
    if isinstance(exc, OSError):  # ConnectionError and its kin included
        return True
    name = type(exc).__name__
    return any(part in name for part in ("Connection", "Connect", "Disconnected", "Payload", "Protocol", "Transport"))


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 3] + "..."
