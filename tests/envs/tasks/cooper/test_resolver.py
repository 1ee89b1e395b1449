"""The model-backed conflict resolver: what it sends, what it accepts, what it rejects."""

from __future__ import annotations

from masgrid.envs.tasks.cooper.merge import resolve_text
from masgrid.envs.tasks.cooper.resolver import extract_answer, llm_resolver


def test_llm_resolver_takes_the_code_block_and_rejects_markers():
    snippet = "a\n<<<<<<< ours\nx = 1\n=======\nx = 2\n>>>>>>> theirs\nb\n"
    prompts: list[str] = []

    def ask(prompt: str) -> str:
        prompts.append(prompt)
        return "Here it is:\n```python\na\nx = 1\nx = 2\nb\n```\nDone."

    assert llm_resolver(ask)(snippet) == "a\nx = 1\nx = 2\nb\n"
    assert snippet in prompts[0]
    # an answer still holding markers (or empty) leaves the region as it was: the stage fails
    assert llm_resolver(lambda p: "```\n" + snippet + "```")(snippet) == snippet
    assert extract_answer("```\n\n```") is None and extract_answer("y = 3") == "y = 3\n"
    text = "top\n" + snippet + "bottom\n"
    assert "<<<<<<<" in resolve_text(text, llm_resolver(lambda p: "=======\n"))
