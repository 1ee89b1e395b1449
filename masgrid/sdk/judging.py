"""An LLM judge's model: settings from a preset and overrides, the command-line options, the client."""

from masgrid._private.actors.backends.base import BackendSettings, ChatBackend, Completion
from masgrid._private.actors.backends.clients import ClientCache
from masgrid._private.platform.judge_model import judge_backend, judge_parser, judge_settings

__all__ = ["BackendSettings", "ChatBackend", "ClientCache", "Completion", "judge_backend", "judge_parser",
           "judge_settings"]
