"""The model an LLM judge calls, chosen as agents' models are: a `conf/model` preset (any
family's), then `key=value` overrides. Both of masgrid's judge commands (SIMAS's pairwise
verdicts, CooperBench's communication labels) take these options and make their client
the same way, so a judge's endpoint, key, retries and shared connection limit behave as an
agent's do. Public as `masgrid.sdk.judging`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from masgrid._private.actors.backends.base import BackendSettings, ChatBackend
from masgrid._private.actors.backends.clients import ClientCache
from masgrid._private.actors.backends.openai_chat import http_backend
from masgrid._private.envs.tokens import get_counter
from masgrid._private.resources import conf_file


def judge_settings(preset: str | None, overrides: list[str]) -> BackendSettings:
    """The judge's endpoint: a conf/model preset, then `key=value` overrides (any BackendSettings field)."""
    data: dict[str, Any] = {}
    if preset:
        try:
            path = conf_file(f"model/{preset}.yaml")
        except FileNotFoundError:
            raise ValueError(f"judge: no model preset {preset!r} (no model/{preset}.yaml in conf/ "
                             "or a family's conf/)") from None
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"judge: --set takes key=value, got {item!r}")
        data[key.strip()] = yaml.safe_load(value)
    try:
        settings = BackendSettings(**data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ValueError(f"judge: model.{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    if not settings.base_url:
        raise ValueError("judge: the judge needs an OpenAI-compatible endpoint: --model PRESET or --set base_url=URL")
    return settings


def judge_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """RESULTS_DIR and the judge model's options (`judge_settings`), shared by every judge command."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("results_dir", type=Path)
    parser.add_argument("--model", default=None, help="judge model preset under conf/model (may differ from the agents')")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="judge model setting, e.g. base_url=http://127.0.0.1:8000/v1 served_name=... temperature=0")
    return parser


def judge_backend(settings: BackendSettings, clients: ClientCache) -> ChatBackend:
    """The judge's chat backend on `clients` (the caller closes them with `aclose()`)."""
    return http_backend(settings, get_counter(), clients)
