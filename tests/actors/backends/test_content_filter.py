"""A provider's content filter is the model's answer, never a platform failure.

Two shapes, written here from the providers' documented replies: an HTTP 200 completion
stopped by the filter (finish_reason `content_filter`, content null or cut short), and an
HTTP 400 refusing the prompt (OpenAI's code `content_policy_violation`, Azure OpenAI's code
`content_filter` with an `innererror`). Each goes through every HTTP client against a real
loopback server.
"""

from __future__ import annotations

import pytest

from masgrid._private.actors.backends.errors import AGENT_LIMIT_CLASSES, http_failure
from tests.actors.backends.test_errors import call as call_with
from tests.support.chat_server import ChatServer, Reply

CLIENTS = ("aiohttp", "httpx", "direct", "lean")

OPENAI_POLICY = {"error": {"message": "Your request was rejected as a result of our safety system.",
                           "type": "invalid_request_error", "param": None, "code": "content_policy_violation"}}
AZURE_FILTER = {"error": {
    "message": "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.",
    "type": None, "param": "prompt", "code": "content_filter", "status": 400,
    "innererror": {"code": "ResponsibleAIPolicyViolation",
                   "content_filter_result": {"hate": {"filtered": True, "severity": "high"}}}}}


def completion(content: str | None, finish_reason: str, usage: bool = True) -> dict:
    body = {"id": "x", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "finish_reason": finish_reason,
                         "message": {"role": "assistant", "content": content}}]}
    if usage:
        body["usage"] = {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
    return body


def call(base_url: str, client: str):
    return call_with(base_url, client, retries=2)  # retries allowed: a filter must not use them


@pytest.mark.parametrize(("content", "text"), [(None, ""), ("", ""), ("The first half of a", "The first half of a")])
def test_a_reply_the_filter_stopped_is_the_models_answer(content, text):
    with ChatServer(lambda request: Reply(body=completion(content, "content_filter"))) as server:
        for n, client in enumerate(CLIENTS, 1):
            c = call(server.base_url, client)
            assert len(server.requests) == n, client  # an answer: never retried
            assert c.error is None and c.error_class is None, (client, c.error)
            assert c.text == text and c.finish_reason == "content_filter", client
            assert (c.tokens_in, c.tokens_out, c.usage_source) == (11, 3, "server"), client  # the provider's count


def test_null_content_with_another_finish_reason_stays_malformed():
    with ChatServer(lambda request: Reply(body=completion(None, "stop"))) as server:
        for client in CLIENTS:
            c = call(server.base_url, client)
            assert c.error_class == "malformed_response" and "content is null" in c.error, client


@pytest.mark.parametrize(("body", "words"), [(OPENAI_POLICY, "safety system"), (AZURE_FILTER, "content management")])
def test_a_prompt_the_filter_refused_is_content_filter_not_retried_and_not_final(body, words):
    with ChatServer(lambda request: Reply(status=400, body=body)) as server:
        for n, client in enumerate(CLIENTS, 1):
            c = call(server.base_url, client)
            assert len(server.requests) == n, client  # the same prompt would be refused again: no retry
            assert c.error_class == "content_filter", (client, c.error)
            assert c.http_status == 400 and words in c.error and c.error.startswith("content_filter: http 400: ")
            assert not c.final, client  # the next prompt may pass: the agent is called again
            assert c.tokens_in == c.tokens_out == 0


@pytest.mark.parametrize(("status", "body", "cls"), [
    (400, OPENAI_POLICY, "content_filter"),
    (400, AZURE_FILTER, "content_filter"),
    (400, '{"error": {"code": "content_filter", "message": "filtered"}}', "content_filter"),  # as text
    (400, b'{"error": {"message": "x", "innererror": {"code": "ResponsibleAIPolicyViolation"}}}', "content_filter"),
    (400, {"error": {"message": "Prompt violates our content policy"}}, "content_filter"),  # words only
    (400, {"error": {"message": "Invalid 'messages': empty array", "code": "invalid_value"}}, "http_4xx"),
    (400, {"error": {"message": "unknown field content_filter_mode"}}, "http_4xx"),  # a field's name, not a refusal
    (500, AZURE_FILTER, "http_5xx"),  # a failing server, whatever its body says
])
def test_the_class_comes_from_the_code_or_the_providers_words(status, body, cls):
    assert http_failure(status, body).error_class == cls


def test_a_content_filter_counts_as_the_models_like_a_full_context():
    assert {"content_filter", "context_length"} <= AGENT_LIMIT_CLASSES
