"""An LLM judge: its model (settings from a preset and overrides, the command-line options, the
client) and the runner that judges recorded items with it, one question at a time."""

from masgrid._private.actors.backends.base import BackendSettings, ChatBackend, Completion
from masgrid._private.actors.backends.clients import ClientCache
from masgrid._private.platform.judging.judge_model import judge_backend, judge_parser, judge_settings
from masgrid._private.platform.judging.judge_runner import JudgeAnswer, ask_judge, judge_each

__all__ = ["BackendSettings", "ChatBackend", "ClientCache", "Completion", "JudgeAnswer", "ask_judge", "judge_backend",
           "judge_each", "judge_parser", "judge_settings"]
