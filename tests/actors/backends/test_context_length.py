"""A prompt that does not fit the model's context is one error class, whatever the server's wording.

The messages are the ones vLLM 0.32 and Ray Serve LLM 2.60 sent the test engine (recorded
verbatim), plus random variations; the expected class is computed here by a separate rule:
HTTP 400 and one of the phrases written out below.
"""

from __future__ import annotations

import random

import pytest

from masgrid._private.actors.backends.errors import error_reply, http_failure

VLLM_PROMPT = ("This model's maximum context length is 4096 tokens. However, your prompt contains at least 4097 "
               "input tokens, which exceeds this limit even without any output tokens. Please reduce the length of "
               "the input prompt. (parameter=input_tokens, value=4097)")
VLLM_MAX_TOKENS = ("max_tokens=5000 cannot be greater than max_model_len=4096. Please request fewer output tokens. "
                   "(parameter=max_tokens, value=5000)")
SERVE_WRAPPED = ("Message: " + VLLM_MAX_TOKENS + " (Request ID: c44812cb-2027-40f6-aeed-50321d7ef815), Internal "
                 "exception: ray.llm._internal.serve.core.configs.openai_api_models.OpenAIHTTPException (Request ID: "
                 "c44812cb-2027-40f6-aeed-50321d7ef815), original exception: ")
OTHER_400 = ["The model `nope` does not exist.", "temperature must be non-negative", "Invalid tool schema",
             "messages: field required"]
PHRASES = ("maximum context length", "cannot be greater than max_model_len")


def expected_class(status: int, text: str) -> str:
    if status == 429:
        return "http_429"
    if status >= 500:
        return "http_5xx"
    return "context_length" if status == 400 and any(p in text.lower() for p in PHRASES) else "http_4xx"


@pytest.mark.parametrize("body", [
    {"error": {"message": VLLM_PROMPT, "type": "BadRequestError", "param": "input_tokens", "code": 400}},
    {"error": {"message": VLLM_MAX_TOKENS, "type": "BadRequestError", "code": 400}},
    {"error": {"message": SERVE_WRAPPED, "type": "OpenAIHTTPException", "param": None, "code": 400}},
    {"object": "error", "message": VLLM_PROMPT, "code": 400},
])
def test_engine_and_serve_wordings_are_context_length_and_final(body):
    failure = http_failure(400, body)
    assert failure.error_class == "context_length" and failure.final and failure.http_status == 400
    assert failure.error.startswith("context_length: http 400: ")


def test_random_wordings_against_the_rule():
    rng = random.Random(11)
    texts = [VLLM_PROMPT, VLLM_MAX_TOKENS, SERVE_WRAPPED, *OTHER_400]
    for _ in range(500):
        status = rng.choice([400, 400, 400, 404, 413, 422, 429, 500, 503])
        text = rng.choice(["", "Message: ", "error: "]) + rng.choice(texts) + rng.choice(["", " (Request ID: x)"])
        if rng.random() < 0.3:
            text = text.upper() if rng.random() < 0.5 else text.lower()
        shape = rng.choice([{"error": {"message": text, "code": status}}, {"message": text}, {"detail": text}, text])
        failure = http_failure(status, shape)
        assert failure.error_class == expected_class(status, text), (status, text)
        assert failure.final == (failure.error_class == "context_length" or
                                 (failure.error_class == "http_4xx" and status not in (408, 409, 429)))


def test_a_handles_error_object_is_read_bare_or_nested():
    nested = {"error": {"message": VLLM_PROMPT, "type": "BadRequestError", "code": 400}}
    bare = {"object": "error", "message": VLLM_PROMPT, "type": "BadRequestError", "code": 400}
    assert error_reply(nested).error_class == error_reply(bare).error_class == "context_length"
    assert error_reply({"error": {"message": "boom", "code": 500}}).error_class == "http_5xx"
    assert error_reply({"choices": []}) is None and error_reply({"no": "code"}) is None and error_reply([1]) is None
