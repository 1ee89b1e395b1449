"""model.cache: which requests share a stored answer, and which never do.

The expectations are written out here, field by field, from the rule in docs/hosted-apis.md
(the endpoint, everything the request body carries, and the agent seed decide an answer;
how the client reaches the endpoint does not), and checked on random requests by what
the cache does: a second request is answered from the store or goes to the model.
"""

from __future__ import annotations

import asyncio
import copy
import random
from pathlib import Path
from typing import Any
from collections.abc import Callable

import pytest

from masgrid._private.actors.backends import BackendSettings, make_backend
from masgrid._private.actors.backends.base import ChatBackend, Completion, Message
from masgrid._private.actors.backends.history import ChatHistory
from masgrid._private.actors.backends.response_cache import CachedBackend, with_cache
from masgrid._private.actors.backends.response_store import cache_root
from masgrid._private.envs.tasks import AgentView
from masgrid._private.envs.tokens import approx_tokens
from masgrid._private.envs.tool_calls import ToolCall
from tests.support.chat_server import ChatServer, Reply


class Counting(ChatBackend):
    """A model stand-in that numbers its answers: a repeated answer can only come from the cache."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[Message], Any]] = []

    async def complete(self, messages: list[Message], tools: list[dict[str, Any]] | None = None) -> Completion:
        self.calls.append((copy.deepcopy(list(messages)), tools))
        n = len(self.calls)
        calls = [ToolCall(id=f"c{n}", name="look", arguments={"n": n}, raw_arguments=f'{{"n": {n}}}')] if tools else None
        return Completion(text=f"answer {n}", tool_calls=calls, tokens_in=10 + n, tokens_out=n, tokens_cached=n // 2,
                          usage_source="server", latency_s=0.25 * n, finish_reason="stop")


def cached(inner: ChatBackend, settings: BackendSettings, replicate: int, shared: dict, kind: str = "openai"):
    return with_cache(inner, kind, settings, replicate, shared)


TOOLS = [{"type": "function", "function": {"name": "look", "parameters": {"type": "object", "properties": {}}}}]


def random_request(rng: random.Random, root: Path) -> dict[str, Any]:
    settings = {"name": f"preset{rng.randrange(3)}", "served_name": rng.choice([None, "org/model-a", "model-b"]),
                "base_url": f"http://127.0.0.1:{rng.randrange(8000, 8003)}/v1", "cache": True, "cache_dir": str(root),
                "temperature": rng.choice([None, 0.0, 0.7]), "top_p": rng.choice([None, 0.9]),
                "max_tokens": rng.choice([None, 64]), "seed": rng.choice([None, 0, 11]),
                "extra_body": rng.choice([{}, {"top_k": 20}, {"tool_choice": "auto"}])}
    turns = rng.randrange(1, 5)
    messages = [{"role": "system", "content": f"You are agent {rng.randrange(4)}."}]
    for t in range(turns):
        messages.append({"role": "user", "content": f"round {t}: {rng.random():.3f} ünïcode\nline"})
        if t < turns - 1:
            messages.append({"role": "assistant", "content": f"reply {t}"})
    return {"settings": settings, "messages": messages, "tools": rng.choice([None, TOOLS]),
            "replicate": rng.randrange(-5, 10**12)}


def _set(path: str, value: Any) -> Callable[[dict], None]:
    def apply(req: dict) -> None:
        req["settings"][path] = value
    return apply


def _other_served(req: dict) -> None:
    req["settings"]["served_name"] = (req["settings"]["served_name"] or req["settings"]["name"]) + "-x"


def _other_name_same_request(req: dict) -> None:
    if req["settings"]["served_name"] is None:  # the preset name is the model sent: keep it
        req["settings"]["served_name"] = req["settings"]["name"]
    req["settings"]["name"] = "another-preset"


def _message(change: Callable[[list], None]) -> Callable[[dict], None]:
    def apply(req: dict) -> None:
        change(req["messages"])
    return apply


def _bump(key: str, values: list) -> Callable[[dict], None]:
    def apply(req: dict) -> None:
        now = req["settings"][key]
        req["settings"][key] = next(v for v in values if v != now)
    return apply


def _split_last(messages: list) -> None:
    text = messages.pop()["content"]
    messages += [{"role": "user", "content": text[:3]}, {"role": "user", "content": text[3:]}]


def _tools(req: dict) -> None:
    req["tools"] = None if req["tools"] else TOOLS


def _tool_schema(req: dict) -> None:
    req["tools"] = [{"type": "function", "function": {"name": "look", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}}}}}]


def _extra(key: str, value: Any) -> Callable[[dict], None]:
    def apply(req: dict) -> None:
        req["settings"]["extra_body"] = {**req["settings"]["extra_body"], key: value}
    return apply


def _replicate(req: dict) -> None:
    req["replicate"] += 1


def _base_url(req: dict) -> None:
    req["settings"]["base_url"] = req["settings"]["base_url"].replace("127.0.0.1", "localhost")


def _slash(req: dict) -> None:
    req["settings"]["base_url"] += "/"


#: change -> whether the answer may come from the first request's entry (written out from the rule)
CHANGES: dict[str, tuple[Callable[[dict], None], bool]] = {
    "nothing": (lambda req: None, True),
    # what decides the answer: never shared
    "served model": (_other_served, False),
    "endpoint": (_base_url, False),
    "replicate (agent seed)": (_replicate, False),
    "temperature": (_bump("temperature", [None, 0.0, 0.7, 1.3]), False),
    "top_p": (_bump("top_p", [None, 0.9, 0.5]), False),
    "max_tokens": (_bump("max_tokens", [None, 64, 7]), False),
    "sampling seed": (_bump("seed", [None, 0, 11, 12]), False),
    "extra_body field": (_extra("min_p", 0.05), False),
    "tool choice": (_extra("tool_choice", "required"), False),
    "tools offered": (_tools, False),
    "tool schema": (_tool_schema, False),
    "last message text": (_message(lambda m: m[-1].update(content=m[-1]["content"] + ".")), False),
    "system message": (_message(lambda m: m[0].update(content="You are someone else.")), False),
    "a role": (_message(lambda m: m[-1].update(role="system")), False),
    "one more message": (_message(lambda m: m.append({"role": "user", "content": "more"})), False),
    "one message less": (_message(lambda m: m.pop()), False),
    "last message split in two": (_message(_split_last), False),
    # how the endpoint is reached, labels, where the cache is: shared
    "preset name (same model sent)": (_other_name_same_request, True),
    "trailing slash of base_url": (_slash, True),
    "timeout": (_set("timeout_s", 7.0), True),
    "retries": (_set("max_retries", 5), True),
    "http client": (_set("http_client", "httpx"), True),
    "concurrency": (_set("max_concurrency", 3), True),
    "api key variable": (_set("api_key_env", "OTHER_KEY"), True),
    "keep-alive": (_set("keepalive_s", 30.0), True),
    "price": (_set("price", {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 2.0}), True),
}


async def ask(req: dict, shared: dict, inner: Counting, history: bool) -> Completion:
    """One call; `history`: the messages as an agent host holds them (a ChatHistory, whose
    per-message encodings the key reuses) rather than a plain list."""
    settings = BackendSettings(**req["settings"])
    backend = cached(inner, settings, req["replicate"], shared)
    messages = ChatHistory(req["messages"]) if history else list(req["messages"])
    if req["tools"]:
        return await backend.complete(messages, req["tools"])
    return await backend.complete(messages)


@pytest.mark.parametrize("change", list(CHANGES))
def test_what_shares_an_answer_on_random_requests(tmp_path: Path, change: str) -> None:
    mutate, shared_answer = CHANGES[change]
    rng = random.Random(f"cache-{change}")
    for case in range(40):
        first = random_request(rng, tmp_path / str(case))  # a store per case: no hit from another case
        second = copy.deepcopy(first)
        mutate(second)
        inner = Counting()
        original = asyncio.run(ask(first, {}, inner, history=False))
        # a fresh host (its own request counts): what a re-executed run is
        again = asyncio.run(ask(second, {}, inner, history=True))
        assert not original.from_cache
        if shared_answer:
            assert len(inner.calls) == 1, (case, first, second)
            assert again.from_cache and again.attempts == 0
            assert again.text == original.text and again.tool_calls == original.tool_calls
            assert (again.tokens_in, again.tokens_out, again.tokens_cached, again.latency_s, again.finish_reason) == (
                original.tokens_in, original.tokens_out, original.tokens_cached, original.latency_s, "stop")
        else:
            assert len(inner.calls) == 2 and not again.from_cache, (case, first, second)
            assert again.text == "answer 2"


def test_a_repeated_request_replays_each_answer_in_order(tmp_path: Path) -> None:
    """Within one replicate the same request twice gets two draws, and a re-execution gets
    the same two, in order (not the first twice)."""
    settings = BackendSettings(name="m", base_url="http://h/v1", cache=True, cache_dir=str(tmp_path))
    messages = [{"role": "user", "content": "same"}]

    async def session(inner: Counting) -> list[str | None]:
        shared: dict = {}
        backend = cached(inner, settings, 5, shared)
        later = cached(inner, settings, 5, shared)  # the same agent's backend in a later phase
        return [(await backend.complete(messages)).text, (await later.complete(messages)).text,
                (await backend.complete(messages)).text]

    inner = Counting()
    assert asyncio.run(session(inner)) == ["answer 1", "answer 2", "answer 3"]
    assert asyncio.run(session(inner)) == ["answer 1", "answer 2", "answer 3"]
    assert len(inner.calls) == 3


def test_failed_calls_are_not_stored_and_the_retry_reaches_the_server(tmp_path: Path) -> None:
    """A 500 is answered again by the server on the next execution, then stored."""
    outcomes = iter([Reply(status=500), Reply("fine")])

    def script(request: dict) -> Reply:
        return next(outcomes, Reply("unexpected"))

    with ChatServer(script) as server:
        settings = BackendSettings(name="m", base_url=server.base_url, max_retries=0, http_client="direct",
                                   cache=True, cache_dir=str(tmp_path))
        view = AgentView(agent=0, n_agents=1, task="sorting", params={}, local_input=None)
        messages = [{"role": "user", "content": "hello"}]

        async def once() -> Completion:
            shared: dict = {}
            backend = make_backend("openai", settings, approx_tokens, view, "broadcast", 42, shared)
            try:
                return await backend.complete(messages)
            finally:
                await shared["clients"].aclose()

        failed, ok, replayed = (asyncio.run(once()) for _ in range(3))
        assert failed.error is not None and not failed.from_cache
        assert ok.text == "fine" and not ok.from_cache and ok.attempts == 1
        assert replayed.text == "fine" and replayed.from_cache and replayed.attempts == 0
        assert len(server.requests) == 2


def test_fenced_mode_keys_on_the_request_as_sent(tmp_path: Path) -> None:
    """With tool_mode=fenced the cache sits inside FencedTools: it stores the raw reply, and the
    replayed reply is parsed into the same tool call."""
    block = '```tool\n{"name": "look", "arguments": {"path": "a"}}\n```'

    with ChatServer(lambda request: Reply(block)) as server:
        settings = BackendSettings(name="m", base_url=server.base_url, max_retries=0, http_client="direct",
                                   tool_mode="fenced", cache=True, cache_dir=str(tmp_path))
        view = AgentView(agent=0, n_agents=1, task="sorting", params={}, local_input=None)

        async def once() -> Completion:
            shared: dict = {}
            backend = make_backend("openai", settings, approx_tokens, view, "broadcast", 1, shared)
            try:
                return await backend.complete([{"role": "user", "content": "go"}], TOOLS)
            finally:
                await shared["clients"].aclose()

        live, replayed = asyncio.run(once()), asyncio.run(once())
    assert len(server.requests) == 1 and "tools" not in server.requests[0]
    assert replayed.from_cache and replayed.tool_calls == live.tool_calls
    assert live.tool_calls is not None and live.tool_calls[0].name == "look"


def test_off_by_default_and_scripted_agents_are_never_wrapped(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MASGRID_CACHE_DIR", str(tmp_path / "env"))
    view = AgentView(agent=0, n_agents=1, task="sorting", params={"k": 1}, local_input=[1])
    plain = make_backend("openai", BackendSettings(name="m", base_url="http://h/v1"), approx_tokens, view, "kv", 0)
    assert not isinstance(plain, CachedBackend)
    scripted = make_backend("scripted", BackendSettings(cache=True), approx_tokens, view, "kv", 0)
    assert not isinstance(scripted, CachedBackend)
    assert not (tmp_path / "env").exists()


def test_cache_dir_default_and_environment(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("MASGRID_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_root(None) == tmp_path / ".cache" / "masgrid" / "model-calls"
    monkeypatch.setenv("MASGRID_CACHE_DIR", str(tmp_path / "shared"))
    assert cache_root(None) == tmp_path / "shared"
    assert cache_root("~/mine") == tmp_path / "mine"


def test_serve_endpoint_is_the_deployment_not_the_node(tmp_path: Path) -> None:
    """backend=serve: the same preset shares answers; another deployment of the same model does not."""
    inner = Counting()
    one = BackendSettings(name="qwen", deployment="app/a", cache=True, cache_dir=str(tmp_path))
    other = one.model_copy(update={"deployment": "app/b"})
    messages = [{"role": "user", "content": "hi"}]

    assert not asyncio.run(with_cache(inner, "serve", one, 0, {}).complete(messages)).from_cache
    assert asyncio.run(with_cache(inner, "serve", one, 0, {}).complete(messages)).from_cache
    assert not asyncio.run(with_cache(inner, "serve", other, 0, {}).complete(messages)).from_cache
    assert len(inner.calls) == 2


def test_model_cache_covers_a_teams_members(tmp_path: Path) -> None:
    from masgrid._private.actors.agent_host import AgentHost, HostSpec

    from masgrid._private.envs.tasks import get_task

    member = BackendSettings(name="member", base_url="http://127.0.0.1:9/v1")
    task = get_task("sorting")
    instance = task.generate(2, 2, 0, mode="random")
    for cache, wrapped in ((True, True), (False, False)):
        run_model = BackendSettings(cache=cache, cache_dir=str(tmp_path))
        host = AgentHost(HostSpec(backend="openai", settings=run_model, protocol="kv", seed=1,
                                  members={"a": ("openai", member), "s": ("scripted", BackendSettings())},
                                  member_of=["a", "s"]))
        backend = host._make_backend(0, task.view(instance, 0))
        assert isinstance(backend, CachedBackend) is wrapped
        if wrapped:
            assert isinstance(backend, CachedBackend) and backend.store.root == tmp_path
            assert backend.settings.base_url == member.base_url
        assert not isinstance(host._make_backend(1, task.view(instance, 1)), CachedBackend)  # scripted


def test_the_cache_dir_is_resolved_where_the_settings_are_made(tmp_path: Path, monkeypatch) -> None:
    """Agent hosts on warm workers or other nodes have another environment: they must get the
    directory the launching command found, not look it up again."""
    monkeypatch.setenv("MASGRID_CACHE_DIR", str(tmp_path / "launcher"))
    on = BackendSettings(name="m", base_url="http://h/v1", cache=True)
    assert on.cache_dir == str(tmp_path / "launcher")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert BackendSettings(cache=True, cache_dir="~/c").cache_dir == str(tmp_path / "c")
    monkeypatch.setenv("MASGRID_CACHE_DIR", str(tmp_path / "worker"))
    backend = with_cache(Counting(), "openai", on, 0, {})
    assert isinstance(backend, CachedBackend) and backend.store.root == tmp_path / "launcher"
    assert BackendSettings().cache_dir is None  # off: nothing resolved, nothing recorded
