"""Preflight against what a hosted API answers for a bad key or an unknown model: one line
naming the endpoint, the model id sent and the key's environment variable (never the key),
before anything starts. The servers are loopback fakes (tests/support/chat_server.py) that
answer as OpenAI documents: 401 for a wrong key, 403 for a key without access, 404 for a
model the endpoint does not serve."""

from __future__ import annotations

import pytest

from masgrid._private.platform.commands.cli import main
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.preflight import PreflightError, preflight
from tests.support.chat_server import ChatServer, Reply

KEY_ENV = "MASGRID_TEST_PROVIDER_KEY"
KEY = "sk-test-0123456789"
NO_ACCESS = {"error": {"message": "Project proj_x does not have access to model test", "type": "invalid_request_error",
                       "code": "model_not_found"}}
NOT_FOUND = {"error": {"message": "The model `test` does not exist or you do not have access to it.",
                       "type": "invalid_request_error", "code": "model_not_found"}}


def hosted_cfg(base_url: str, tmp_path, **model) -> RunConfig:
    return RunConfig(backend="openai", agents=2, k=2, results_dir=str(tmp_path),
                     model={"name": "test", "base_url": base_url, "timeout_s": 5, "api_key_env": KEY_ENV, **model})


def refusal(cfg: RunConfig) -> str:
    with pytest.raises(PreflightError) as err:
        preflight([cfg])
    message = str(err.value)
    assert "\n" not in message and KEY not in message
    return message


@pytest.mark.parametrize(("value", "state"), [
    (None, "is not set here"),
    ("", "is empty here"),
    ("sk-wrong", "is set, and its key was refused here"),
])
def test_a_refused_key_names_the_endpoint_and_the_variable(tmp_path, monkeypatch, value, state):
    if value is None:
        monkeypatch.delenv(KEY_ENV, raising=False)
    else:
        monkeypatch.setenv(KEY_ENV, value)
    with ChatServer(lambda body: Reply(text="ok"), api_key=KEY) as server:
        message = refusal(hosted_cfg(server.base_url, tmp_path))
        assert server.refused_keys == 1 and not server.requests  # refused at GET /models: no call made
    assert message == (f"preflight {server.base_url} (model test): GET /models: HTTP 401: Incorrect API key provided.; "
                       f"the key is read from ${KEY_ENV} (model.api_key_env), which {state}")
    assert "sk-wrong" not in message


def test_the_right_key_passes_and_is_the_one_sent(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    with ChatServer(lambda body: Reply(text="ok"), api_key=KEY) as server:
        preflight([hosted_cfg(server.base_url, tmp_path)])
        assert server.refused_keys == 0 and len(server.requests) == 1


def test_a_key_without_access_to_the_model_is_refused_at_the_call(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    with ChatServer(lambda body: Reply(status=403, body=NO_ACCESS), api_key=KEY) as server:
        message = refusal(hosted_cfg(server.base_url, tmp_path))
    assert message == (f"preflight {server.base_url} (model test): 1-token completion: HTTP 403: Project proj_x does "
                       f"not have access to model test; the key is read from ${KEY_ENV} (model.api_key_env), which "
                       "is set, and its key was refused here")


def test_an_unknown_model_is_one_line_with_what_the_endpoint_lists(tmp_path):
    with ChatServer(lambda body: Reply(text="ok"), models=["gpt-a", "gpt-b"]) as server:
        message = refusal(hosted_cfg(server.base_url, tmp_path, served_name="gpt-c"))
        # refused on the list alone, even where a call would be answered: a server that ignores the model
        # field would otherwise record another model's answers under this name
        assert not server.requests
    assert message == (f"preflight {server.base_url} (model gpt-c): model gpt-c not listed; the server serves gpt-a, "
                       "gpt-b (model.served_name, else model.name, is the id sent)")


def test_a_listed_model_the_key_cannot_use_is_the_providers_404_in_one_line(tmp_path):
    with ChatServer(lambda body: Reply(status=404, body=NOT_FOUND)) as server:
        message = refusal(hosted_cfg(server.base_url, tmp_path))
    assert message == (f"preflight {server.base_url} (model test): 1-token completion: HTTP 404: The model `test` "
                       "does not exist or you do not have access to it.")


def test_every_team_member_endpoint_is_checked_with_its_own_key_variable(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.delenv("MASGRID_TEST_OTHER_KEY", raising=False)
    with ChatServer(lambda body: Reply(text="ok"), models=("good",), api_key=KEY) as good, \
            ChatServer(lambda body: Reply(text="ok"), models=("other",), api_key="sk-other") as other:
        presets = {"good": {"preset": "local_vllm", "name": "good", "base_url": good.base_url, "api_key_env": KEY_ENV},
                   "other": {"preset": "local_vllm", "name": "other", "base_url": other.base_url,
                             "api_key_env": "MASGRID_TEST_OTHER_KEY"}}
        cfg = RunConfig.from_mapping({"task": "sorting", "agents": 3, "k": 1, "backend": "openai",
                                      "results_dir": str(tmp_path),
                                      "team": {"models": ["good", "other", "scripted"], "presets": presets}})
        message = refusal(cfg)
        assert good.refused_keys == 0 and other.refused_keys == 1
    assert message.startswith(f"preflight {other.base_url} (model other): GET /models: HTTP 401: ")
    assert message.endswith("$MASGRID_TEST_OTHER_KEY (model.api_key_env), which is not set here")


def test_the_cli_refuses_a_bad_key_in_one_line_and_starts_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with ChatServer(lambda body: Reply(text="ok"), api_key=KEY) as server:
        code = main(["run", "-m", "seed=1,2", "backend=openai", "model=local_vllm", f"model.base_url={server.base_url}",
                     f"model.api_key_env={KEY_ENV}", f"results_dir={tmp_path}"])
        assert not server.requests
    assert code == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert lines == [f"masgrid run: preflight {server.base_url} (model local_vllm): GET /models: HTTP 401: Incorrect "
                     f"API key provided.; the key is read from ${KEY_ENV} (model.api_key_env), which is not set here"]
    assert not (tmp_path / "runs").exists()


def test_a_real_engine_refuses_an_unknown_model_in_one_line(vllm_engine, tmp_path):
    """The listing the refusal gives is what the engine serves."""
    from tests.support.engine import SERVED

    cfg = RunConfig(backend="openai", agents=2, k=2, results_dir=str(tmp_path),
                    model={"name": "no-such-model", "base_url": vllm_engine.base_url, "max_tokens": 8})
    assert refusal(cfg) == (f"preflight {vllm_engine.base_url} (model no-such-model): model no-such-model not "
                            f"listed; the server serves {SERVED} (model.served_name, else model.name, is the id sent)")
