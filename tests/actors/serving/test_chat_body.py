"""ChatBody: a plain request body that Serve LLM's real request routers read as they read
vLLM's request object, and that pickles as the dict it is."""

from __future__ import annotations

import pickle
import random
import subprocess
import sys
from types import SimpleNamespace

import pytest

from masgrid._private.actors.serving.chat_body import ChatBody


def random_body(rng: random.Random) -> dict:
    messages = [{"role": rng.choice(["system", "user", "assistant"]),
                 "content": "".join(rng.choice("ab c\n{}é") for _ in range(rng.randint(0, 30)))}
                for _ in range(rng.randint(1, 5))]
    body = {"model": "tiny", "messages": messages}
    if rng.random() < 0.5:
        body["max_tokens"] = rng.randint(1, 64)
    return body


def test_it_pickles_as_the_dict_it_is_and_reads_fields_as_attributes():
    rng = random.Random(0)
    for _ in range(200):
        body = random_body(rng)
        wrapped = ChatBody(body)
        back = pickle.loads(pickle.dumps(wrapped))
        assert type(back) is ChatBody and back == body and back.messages == body["messages"]
        assert getattr(back, "max_tokens", None) == body.get("max_tokens")
        assert not hasattr(back, "prompt") and not hasattr(back, "__missing_dunder__")


def test_serve_llms_routers_read_it():
    """The prefix-aware router's text and the KV-aware router's output cap, by their own code."""
    from ray.llm._internal.serve.routing_policies.kv_aware.kv_aware_router import _get_expected_output_tokens
    from ray.llm._internal.serve.routing_policies.prefix_aware.prefix_aware_router import PrefixCacheAffinityRouter

    router = object.__new__(PrefixCacheAffinityRouter)  # only its text extraction is used
    rng = random.Random(1)
    for _ in range(100):
        body = random_body(rng)
        pending = SimpleNamespace(args=[ChatBody(body)])
        assert router._extract_text_from_request(pending) == "".join(m["content"] for m in body["messages"])
        assert _get_expected_output_tokens(pending) == body.get("max_tokens")


def test_the_caller_side_imports_no_vllm():
    code = ("import sys; import masgrid._private.actors.serving.handle_backend; "
            "print(sorted(m for m in ('vllm', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("name", ["messages", "max_tokens"])
def test_a_missing_field_is_an_attribute_error(name):
    with pytest.raises(AttributeError):
        getattr(ChatBody({}), name)
