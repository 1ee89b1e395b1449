"""Chat backends: turn a chat history into one reply, with usage and failure recorded.

Every backend returns a `Completion`, never raises for a model-side failure: a failed
call carries `error` and the harness answers it with the model-error reply (F.3).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from masgrid._private.actors.backends.sampling import PaperSampling
from masgrid._private.envs.tokens import check_spec
from masgrid._private.envs.tool_calls import ToolCall, has_blocks, with_calls

#: an OpenAI chat message: {"role", "content"}; an assistant turn may carry `tool_calls`
#: (OpenAI format), a `tool` message answers one call through its `tool_call_id`
Message = dict[str, Any]
#: the finish_reason of a reply the provider's content filter cut short (OpenAI, Azure OpenAI):
#: the model's answer as deployed, its text empty or partial
FILTERED = "content_filter"


class Completion(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str | None = None
    #: the tools the reply asked to run (None: it called none); a call the harness cannot run
    #: carries its `error` (backends/chat_tools.py). With model.tool_mode=fenced, `text` is
    #: the whole reply, the ```tool blocks included
    tool_calls: list[ToolCall] | None = None
    #: "<error_class>: <message>" of a call that failed after its retries (backends/errors.py)
    error: str | None = None
    error_class: str | None = None
    http_status: int | None = None
    #: the server refused the request for good (a 4xx other than 408/409/429): this agent
    #: is not called again in the phase and counts as not submitted
    final: bool = False
    tokens_in: int = 0
    tokens_out: int = 0
    #: prompt tokens the server answered from its prefix cache (usage.prompt_tokens_details.
    #: cached_tokens, vLLM with --enable-prompt-tokens-details); None: the server did not say
    tokens_cached: int | None = None
    #: server: the reply's usage fields; estimate: counted here (the server sent none);
    #: invalid: counted here because the server's usage was not a count (negative, huge,
    #: not an integer); none: no tokens (a failed call adds nothing to any token count)
    usage_source: Literal["server", "estimate", "invalid", "none"] = "none"
    #: wall time of the call, retries and their backoff included, our own queueing (queue_s) not
    latency_s: float = 0.0
    #: seconds the call waited for its endpoint's shared connection limit (model.max_connections,
    #: backends/endpoint_limit.py), all attempts together; 0 without a shared limit
    queue_s: float = 0.0
    #: wall-clock time (epoch seconds) the call's first request went out, after the host's
    #: concurrency limit and the endpoint's shared limit
    started_at: float | None = None
    attempts: int = 1
    finish_reason: str | None = None
    #: answered from the response cache (model.cache, backends/response_cache.py): no request
    #: was sent (attempts 0); tokens, latency_s and finish_reason are the original call's
    from_cache: bool = False
    #: reply validation (protocols with `reply_validator`): None = not validated, "ok",
    #: "retried" (first reply invalid, retry valid) or "failed" (retry invalid too)
    validation: str | None = None
    #: why the reply failed validation (the retry prompt), when it did
    invalid_reason: str | None = None
    #: the first, invalid completion when this one is its retry
    retry_of: Completion | None = None

    @property
    def recorded_text(self) -> str | None:
        """The reply as the events record it: the text, then each tool call as a ```tool block
        with its name and arguments as the model wrote them (a fenced reply already holds
        its blocks). None for a failed call."""
        if not self.tool_calls or (self.text and has_blocks(self.text)):
            return self.text
        return with_calls(self.text, self.tool_calls)


class TokenPrice(BaseModel):
    """A model's list price, for the cost estimate of `masgrid report` (MAS-Bench Table 4).
    Optional and never part of a run's identity: it is recorded in `config_json` only."""

    model_config = ConfigDict(extra="forbid")

    input_usd_per_mtok: float = Field(ge=0, description="US dollars per million prompt tokens")
    output_usd_per_mtok: float = Field(ge=0, description="US dollars per million completion tokens")
    source: str | None = Field(None, description="where the price was read, and when")


class BackendSettings(BaseModel):
    """How agents reach a model; the `model` config group fills these."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field("scripted", description="preset name, recorded as the run's `model`")
    served_name: str | None = Field(None, description="model id sent in requests; defaults to name")
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    api_key_env: str = Field("OPENAI_API_KEY", description="environment variable holding the API key")
    temperature: float | None = Field(None, ge=0)
    top_p: float | None = Field(None, gt=0, le=1)
    max_tokens: int | None = Field(None, gt=0)
    seed: int | None = None
    timeout_s: float = Field(120.0, gt=0, description="per-attempt timeout of one model call")
    max_retries: int = Field(2, ge=0, description="retries after the first attempt (the client backs off exponentially)")
    max_concurrency: int = Field(256, gt=0, description="model calls in flight per agent host")
    max_connections: int | None = Field(
        None, gt=0, description="ceiling of one adaptive limit on requests in flight to this endpoint (base_url "
        "and model), shared by every run, process and node of the sweep: halved on 429/503/529 and timeouts, "
        "raised again while calls succeed, and a Retry-After pauses the whole endpoint "
        "(backends/endpoint_limit.py, docs/hosted-apis.md). Null: no shared limit (each call retries alone)")
    http_client: Literal["aiohttp", "httpx", "direct", "lean"] = Field(
        "aiohttp", description="HTTP client: the openai client on its aiohttp transport (its `aiohttp` extra; about "
        "a third of the client CPU per call of httpx, see docs/serving.md), on its default httpx, `direct`: "
        "aiohttp without the openai client (same requests, retry policy and error records; about a quarter "
        "of the CPU per call again), or `lean`: the same requests over a plain-HTTP/1.1 keep-alive client of "
        "masgrid's own (http:// only; backends/lean_http.py)")
    keepalive_s: float | None = Field(
        None, gt=0, description="idle HTTP connections are dropped after this; keep it below the server's "
        "keep-alive so the client never reuses a connection the server is closing. Unset: 4 s for "
        "backend=openai (uvicorn and vLLM keep idle connections 5 s), 60 s for backend=serve over HTTP "
        "(Ray Serve's proxy keeps them 90 s)")
    extra_body: dict = Field(default_factory=dict, description="extra request fields (vLLM sampling knobs)")
    tokenizer: str | None = Field(
        None, description="the model's tokenizer as a token-counter spec ('hf:<tokenizer.json>' or "
        "'hf-package:<package>/<path>'); execution.token_counter=auto counts with it (envs/tokens.py)")
    deployment: str | None = Field(None, description="Ray Serve app/deployment for backend=serve")
    serving: dict = Field(default_factory=dict, description="Serve LLM deployment settings (conf/model)")
    price: TokenPrice | None = Field(None, description="list price per million tokens, for cost estimates only; "
                                                       "unset: reports say the cost is unknown")
    cache: bool = Field(False, description="answer a request identical to one already answered (same endpoint, "
                        "request body and agent seed) from a local store instead of the model, and store every "
                        "successful answer (docs/hosted-apis.md); never part of a run's identity")
    cache_dir: str | None = Field(None, description="where model.cache keeps answers; unset: $MASGRID_CACHE_DIR, "
                                  "else ~/.cache/masgrid/model-calls. On a multi-node cluster, shared storage")

    tool_mode: Literal["native", "fenced"] = Field(
        "native", description="how tools reach the model: `native` sends them as the request's `tools` and reads "
        "the reply's `tool_calls` (the server must parse tool calls, e.g. vLLM with a tool-call parser); "
        "`fenced` describes them in the system prompt and reads ```tool blocks from the reply text, for servers "
        "without tool parsing (backends/chat_tools.py). The scripted backend ignores it")
    tool_constraint: Literal["none", "regex"] = Field(
        "none", description="regex: when tools are offered, the engine's structured outputs force the reply to be "
        "one well-formed call in the hermes layout, which its tool parser reads (backends/constrained_tools.py); "
        "for a model that cannot choose tools, e.g. the tiny random one. none: the model chooses")
    paper_sampling: PaperSampling | None = Field(
        None, description="what a paper's runs of this model used for sampling (backends/sampling.py, "
        "docs/models.md); recorded, never sent")

    @field_validator("tokenizer")
    @classmethod
    def _tokenizer_spec(cls, value: str | None) -> str | None:
        return None if value is None else check_spec(value, allow_auto=False)

    @model_validator(mode="after")
    def _lean_speaks_plain_http(self) -> BackendSettings:
        if self.http_client == "lean" and self.base_url and not self.base_url.startswith("http://"):
            raise ValueError(f"model.http_client=lean speaks plain http:// only, not {self.base_url}: use "
                             "http_client=direct (aiohttp) for https")
        return self

    @model_validator(mode="after")
    def _cache_dir_resolved_here(self) -> BackendSettings:
        """The cache directory as the launching process finds it (its environment, its home):
        the agent hosts, on warm workers or other nodes, then use the same one."""
        if self.cache:
            from masgrid._private.actors.backends.response_store import cache_root

            self.cache_dir = str(cache_root(self.cache_dir))
        return self

    @property
    def request_model(self) -> str:
        return self.served_name or self.name


class ChatBackend(ABC):
    @abstractmethod
    async def complete(self, messages: list[Message], tools: list[dict[str, Any]] | None = None) -> Completion:
        """One reply to `messages`; `tools` (OpenAI function tools) are offered to the model."""

    async def close(self) -> None:
        return None
