import pytest

from masgrid._private.envs.protocols import make_protocol
from masgrid.families.masbench.answers import parse_int_list


def int_list_parser(k: int):
    return lambda agent, raw: parse_int_list(raw, k)


@pytest.fixture
def make():
    def _make(name: str, n: int = 3, k: int = 2):
        return make_protocol(name, n, int_list_parser(k))

    return _make


def run(proto, agent: int, *commands: str) -> list[str]:
    text = "\n".join(f"```\n{c}\n```" for c in commands)
    return [o.reply for o in proto.apply_reply(agent, text, None)]
