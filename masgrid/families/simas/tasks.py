"""SIMAS tasks `simas/<dataset>`: one question discussed by n agents for T rounds (Algorithm 1).

A run answers one question: `simas.question` indexes the sample of `simas.sample`
questions (17 per subject, section 4.1) drawn with `simas.sample_seed`; `seed` is the
repeat (the paper repeats each configuration three times), which seeds sampling and the
scripted simulation, not the question. Accuracy of a grid point is the mean over its
questions and repeats (families/simas/analysis.py).

Instance layout (`masgrid instance simas/mmlu simas.subject=college_physics`):
- params: question, choices (None for an integer answer), question_id, dataset, subject,
  discipline, rounds T, profiles (generate | pool), condition, names;
- inputs[i]: name, profile (drawn from the pool by seed: used with profiles=pool, and as
  the fallback when a generated profile reply is unusable);
- expected: the answer (option letter or integer), the same for every agent: the group
  has one output, o = Pi(h_{n,T}, a_1), and `correct` credits it to every agent.

Generation questions (`simas/open`, `simas/coding`; section 5, appendix C.2) have no key:
the final reply's full text is the group's submission, `accuracy`, `success` and `correct`
are null (not scored, never a made-up 0), and `masgrid judge` compares the SIMAS answer
with the CoT answer of the same model, question and seed afterwards.
"""

from __future__ import annotations

from typing import Any, ClassVar

from masgrid.families.simas import prompts
from masgrid.families.simas.answers import parse_choice, parse_integer
from masgrid.families.simas.datasets import PAPER_SUBJECTS, Question, load_questions, sample_questions
from masgrid.families.simas.groupchat import final_submission, is_unparsable, pool_profile_dicts, unwrap_output
from masgrid.families.simas.options import SimasOptions
from masgrid.sdk.policies import ScriptedPolicy
from masgrid.sdk.tasks import AgentView, Instance, Score, Task, register_task

OPTION_KEYS = tuple(SimasOptions.model_fields)


def agent_names(n: int) -> list[str]:
    return [f"Agent_{i + 1}" for i in range(n)]


def select_question(dataset: str, options: dict[str, Any]) -> Question:
    questions = load_questions(dataset, options.get("data_dir"), options.get("subject"))
    sample = sample_questions(questions, int(options.get("sample", 17)), int(options.get("sample_seed", 0)))
    index = int(options.get("question", 0))
    if not sample:
        raise ValueError(f"simas: the {dataset} data holds no question")
    if index >= len(sample):
        raise ValueError(f"simas.question: {index} is beyond the {len(sample)} sampled questions (0..{len(sample) - 1})")
    return sample[index]


class SimasTask(Task):
    family = "simas"
    schedule = "sequential"
    protocols = ("groupchat",)
    conditions = tuple(prompts.CONDITIONS)
    generation_keys = ("condition",)
    #: a question, not a workload: `k` and `mode` are never read
    ignored_keys = ("k", "mode")
    dataset: ClassVar[str]

    def identity_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """The simulation's knobs matter only to scripted agents; the subject only to MMLU."""
        out = dict(options)
        if self.dataset != "mmlu":
            out["subject"] = None
        return out

    def validate_params(self, agents: int, k: int, protocol: str, condition: str) -> None:
        super().validate_params(agents, k, protocol, condition)
        if condition == "cot" and agents != 1:
            raise ValueError("agents: condition cot is the single-agent chain-of-thought baseline; set agents=1")

    def validate_options(self, agents: int, k: int, seed: int, **extra: Any) -> None:
        unknown = set(extra) - set(OPTION_KEYS) - {"condition"}
        if unknown:
            raise ValueError(f"simas: unknown SIMAS option(s): {', '.join(sorted(unknown))}")
        SimasOptions(**{k: v for k, v in extra.items() if k in OPTION_KEYS})
        select_question(self.dataset, extra)  # a missing file or question is one line now

    def phase_count(self, instance: Instance, condition: str) -> int:
        """Profile generation is a phase of its own, before the discussion."""
        return self.phase_count_of(instance.params, condition)

    def round_limit(self, instance: Instance, max_rounds: int) -> int:
        """T discussion rounds plus the final answer; `max_rounds` does not apply."""
        return int(instance.params["rounds"]) + 1

    # -- generation ------------------------------------------------------------------------------
    def generate(self, agents: int, k: int, seed: int, **extra: Any) -> Instance:
        options = SimasOptions(**{key: v for key, v in extra.items() if key in OPTION_KEYS})
        question = select_question(self.dataset, options.model_dump())
        condition = extra.get("condition") or "base"
        names = agent_names(agents)
        subject = question.subject
        params: dict[str, Any] = {
            "agents": agents, "seed": seed, "dataset": self.dataset, "subject": subject,
            "discipline": subject.replace("_", " ") if self.dataset == "mmlu" else self.discipline,
            "task_type": PAPER_SUBJECTS.get(subject, self.task_type),
            "question_id": question.id, "question": question.text, "choices": question.choices,
            "rounds": options.rounds, "profiles": options.profiles, "condition": condition, "names": names,
            "sim_error": options.sim_error, "sim_conformity": options.sim_conformity,
            "data_dir": options.data_dir, "answer_from": options.answer_from,
        }
        if question.kind == "text":
            params.update(criteria=question.criteria, category=question.subject, language=question.language,
                          constraints=question.constraints)
        profiles = pool_profile_dicts(agents, seed)
        inputs = [{"name": names[i], "profile": profiles[i]} for i in range(agents)]
        answer: Any = None if question.answer is None else question.answer if question.choices else int(question.answer)
        return Instance(task=self.name, params=params, inputs=inputs, expected=[answer] * agents,
                        meta={"question_id": question.id})

    discipline: ClassVar[str] = "general knowledge"
    task_type: ClassVar[str] = "mixed"

    # -- prompts ---------------------------------------------------------------------------------
    def build_prompt(self, view: AgentView, protocol: str, condition: str) -> str:
        params = view.params
        n = view.n_agents
        if self.phase_count_of(params, condition) == 2 and view.phase == 1:
            return prompts.profile_system(n, params)
        profile = view.previous if _is_profile(view.previous) else view.local_input["profile"]
        return prompts.system_prompt(view.agent, n, int(params["rounds"]), view.local_input["name"], condition,
                                     profile, prompts.answer_from(params))

    @staticmethod
    def phase_count_of(params: dict[str, Any], condition: str) -> int:
        return 2 if params.get("profiles") == "generate" and condition != "cot" else 1

    # -- answers ---------------------------------------------------------------------------------
    def parse_answer(self, instance: Instance, agent: int, raw: str) -> Any:
        if prompts.is_text(instance.params):
            if not raw or not raw.strip():
                raise ValueError("empty answer")
            return raw.strip()  # the full text: the judge reads it (masgrid judge)
        choices = instance.params.get("choices")
        return parse_choice(raw, len(choices)) if choices else parse_integer(raw)

    def submission(self, instance: Instance, agent: int, raw: str) -> tuple[Any, str | None]:
        """As the group chat records a final reply: a refused one submits the unparsable marker."""
        return final_submission(lambda text: self.parse_answer(instance, agent, text), raw,
                                with_confidence=not prompts.is_text(instance.params))

    def score(self, instance: Instance, answers: list[Any]) -> Score:
        if len(answers) != instance.n_agents:
            raise ValueError(f"expected {instance.n_agents} answers, got {len(answers)}")
        n = instance.n_agents
        # a_1 (or a_n: simas.answer_from) gives the group's answer, with the confidence it stated
        output, confidence = unwrap_output(answers[prompts.answerer_index(instance.params, n)])
        if prompts.is_text(instance.params):  # no key: judged afterwards, not scored here
            return Score(success=None, correct=[None] * n, partial=[None] * n,
                         metrics={"submitted": int(output is not None), "answer_unparsable": is_unparsable(output),
                                  "answer_confidence": None})
        ok = output is not None and not is_unparsable(output) and output == instance.expected[0]
        return Score(success=ok, correct=[ok] * n, partial=[float(ok)] * n,
                     metrics={"submitted": int(output is not None), "answer_unparsable": is_unparsable(output),
                              "answer_confidence": confidence})

    def run_metrics(self, instance: Instance, score: Score, usage: dict[str, float]) -> dict[str, Any]:
        p = instance.params
        source: str | None = "pool"
        if self.phase_count(instance, str(p.get("condition"))) == 2:
            first = (usage.get("phase1_submissions") or [None])[0]  # type: ignore[index]
            source = first.get("source", "generated") if isinstance(first, dict) else "missing"
        if p.get("condition") == "cot":
            source = None
        accuracy = None if score.success is None else float(score.success)
        return {"accuracy": accuracy, "discussion_rounds": p["rounds"], "question_id": p["question_id"],
                "subject": p["subject"], "profiles_source": source,
                "answer_from": None if p.get("condition") == "cot" else prompts.answer_from(p)}

    def scripted_policy(self, view: AgentView, protocol: str, seed: int) -> ScriptedPolicy:
        from masgrid.families.simas.policy import SimulatedDiscussant

        return SimulatedDiscussant(view, protocol, seed)


def _is_profile(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(value.get(f), str) for f in ("personality", "belief", "expertise"))


@register_task
class SimasMMLU(SimasTask):
    name = "simas/mmlu"
    dataset = "mmlu"


@register_task
class SimasEKAR(SimasTask):
    name = "simas/ekar"
    dataset = "ekar"
    discipline = "analogical reasoning"
    task_type = "analogical reasoning"


@register_task
class SimasAIME(SimasTask):
    name = "simas/aime"
    dataset = "aime"
    discipline = "competition mathematics"
    task_type = "mathematical reasoning"


@register_task
class SimasOpen(SimasTask):
    """Open-ended questions with evaluation criteria (our set, the layout of Table 6)."""

    name = "simas/open"
    dataset = "open"
    discipline = "open-ended problem solving"
    task_type = "open-ended generation"


@register_task
class SimasCoding(SimasTask):
    """Coding questions, algorithmic and project-sized (our set, the layout of Table 5)."""

    name = "simas/coding"
    dataset = "coding"
    discipline = "software engineering"
    task_type = "coding"

