"""Calling a model outside an agent's turn (a scorer, a resolver, a judge): its settings and
client, the scoring-model request a task makes, token counting and price."""

from masgrid._private.actors.backends import BackendSettings, ClientCache
from masgrid._private.actors.backends.base import ChatBackend, Completion
from masgrid._private.actors.backends.openai_chat import http_backend
from masgrid._private.envs.tokens import get_counter
from masgrid._private.envs.tool_calls import ToolCall, ToolReply
from masgrid._private.platform.run.scoring_model import run_with_ask, scoring_settings
from masgrid._private.pricing import usd_cost

__all__ = ["BackendSettings", "ChatBackend", "ClientCache", "Completion", "ToolCall", "ToolReply", "get_counter",
           "http_backend", "run_with_ask", "scoring_settings", "usd_cost"]
