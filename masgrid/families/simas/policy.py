"""A scripted simulation of a SIMAS discussion, so the family runs (and its analysis is
tested) without a model. It is a simple model of group answering, not an LLM stand-in:

- each agent holds a private belief: the answer key with probability 1 - `sim_error`,
  otherwise a wrong answer drawn uniformly (another option letter; for integers, the key
  shifted by a nonzero amount);
- on each turn it reads the answers stated so far ("My answer: X" in earlier replies),
  and with probability `sim_conformity` adopts the most frequent of the latest answers of
  the others (an information cascade: early wrong answers can sweep the group), else it
  keeps its belief; it states its current answer;
- the answering agent's final answer is the majority of everyone's latest stated answers
  (its own on a tie), with the share of those answers that agree as its stated confidence
  (`Confidence: <percent>`); the profile request is answered from the pool; under `cot` the
  single agent states its belief;
- generation questions (simas/open, simas/coding) have no key: each turn names one of the
  question's criteria, and the final answer is a templated text with one line per
  criterion, so the judge's path (pairing, both orders, tables) runs end to end. Its
  content says nothing about answer quality.

Everything is seeded by (seed, agent, question), so a curve of accuracy against n is
reproducible by seed.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from typing import Any

from masgrid.families.simas.datasets import load_questions
from masgrid.sdk.policies import ScriptedPolicy
from masgrid.sdk.tasks import AgentView

_STATED = re.compile(r"^\[(\w+)\]: .*?My answer: (\S+?)\.?$", re.MULTILINE)


def answer_key(params: dict[str, Any]) -> str:
    """The simulation knows the key: it reads the question's answer from the dataset."""
    dataset = params["dataset"]
    questions = load_questions(dataset, params.get("data_dir"), params["subject"] if dataset == "mmlu" else None)
    for q in questions:
        if q.id == params["question_id"]:
            if q.answer is None:  # a generation question: its params carry criteria, and no key is read
                raise ValueError(f"simas simulation: question {q.id} has no answer key (a generation question)")
            return q.answer
    raise ValueError(f"simas simulation: question {params['question_id']} not in the data")


class SimulatedDiscussant(ScriptedPolicy):
    def __init__(self, view: AgentView, protocol: str, seed: int = 0) -> None:
        super().__init__(view, protocol, seed)
        p = view.params
        self.name = view.local_input["name"]
        self.rng = random.Random(f"simas-sim:{seed}:{view.agent}:{p['question_id']}")
        self.text_mode = p.get("criteria") is not None
        self.key = "" if self.text_mode else answer_key(p)
        self.choices: list[str] | None = p.get("choices")
        self.belief = "" if self.text_mode else self._draw_belief(float(p.get("sim_error", 0.35)))
        self.conformity = float(p.get("sim_conformity", 0.5))
        self.latest: dict[str, str] = {}  # speaker -> latest stated answer
        self.current = self.belief

    def _draw_belief(self, error: float) -> str:
        if self.rng.random() >= error:
            return self.key
        if self.choices:
            wrong = [c for c in "ABCDEFGHIJ"[:len(self.choices)] if c != self.key]
            return self.rng.choice(wrong)
        return str(int(self.key) + self.rng.choice([-1, 1]) * self.rng.randint(1, 9))

    def act(self, observations: list[str]) -> str:
        text = "\n".join(observations)
        if '"personality"' in text:  # the profile request (simas.profiles=generate)
            from masgrid.families.simas.profiles import pool_profiles

            profiles = pool_profiles(self.view.n_agents, self.seed)
            return json.dumps([{k: getattr(p, k) for k in ("personality", "belief", "expertise")} for p in profiles])
        if self.text_mode:
            return self._text_turn(text)
        for speaker, answer in _STATED.findall(text):
            self.latest[speaker] = answer
        if "Final answer:" in text:
            return self._final()
        others = Counter(a for s, a in self.latest.items() if s != self.name)
        if others and self.rng.random() < self.conformity:
            top = max(others.values())
            leaders = sorted(a for a, c in others.items() if c == top)
            self.current = leaders[0] if self.current not in leaders else self.current
        else:
            self.current = self.belief
        self.latest[self.name] = self.current
        return f"Having weighed the question and what was said, I hold my view. My answer: {self.current}."

    def _final(self) -> str:
        if self.view.params.get("condition") == "cot":
            return f"Working step by step, I reach {self.belief}.\nFinal answer: {self.belief}"
        votes = Counter(self.latest.values()) or Counter({self.current: 1})
        top = max(votes.values())
        leaders = [a for a, c in votes.items() if c == top]
        answer = self.current if self.current in leaders else sorted(leaders)[0]
        confidence = round(100 * votes[answer] / sum(votes.values()))
        return (f"The group's answers were {dict(sorted(votes.items()))}.\nConfidence: {confidence}\n"
                f"Final answer: {answer}")

    def _text_turn(self, text: str) -> str:
        """A generation question: a templated contribution, or the templated final answer."""
        criteria = list(self.view.params["criteria"])
        focus = self.rng.choice(criteria)
        if "The discussion is over" in text or "### Reasoning" in text:  # SIMAS final, or the CoT prompt
            style = "single-pass" if self.view.params.get("condition") == "cot" else "group"
            lines = [f"- {c}: addressed with {self.rng.choice(['a short', 'a detailed'])} note." for c in criteria]
            return f"Our {style} answer to the question.\n" + "\n".join(lines)
        return f"I propose we look closely at {focus}."
