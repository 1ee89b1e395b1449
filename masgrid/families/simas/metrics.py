"""Run-table columns of this family (name -> type, unit, meaning)."""

from __future__ import annotations

from masgrid.family import Metric

METRICS: dict[str, Metric] = {
    "accuracy": Metric(type="float64", unit='fraction in [0, 1]', meaning=(
        "SIMAS: 1 if the group's final answer (the first agent's, after T rounds) is right, "
                 "else 0; a grid point's accuracy is the mean over its questions and repeats; null for the generation "
                 "questions (simas/open, simas/coding), which `masgrid judge` compares instead")),
    "discussion_rounds": Metric(type="int64", unit='rounds', meaning=(
        "SIMAS discussion rounds T")),
    "question_id": Metric(type="string", unit='label', meaning=(
        "SIMAS question: <dataset>/<subject or id>/<index in the file>")),
    "subject": Metric(type="string", unit='label', meaning=(
        "SIMAS subject (MMLU subject, ekar or aime2025)")),
    "profiles_source": Metric(type="string", unit='label', meaning=(
        "SIMAS agent profiles: generated, pool, or pool_fallback (the generated reply "
                        "was unusable after one retry), or missing; null under cot")),
    "answer_unparsable": Metric(type="bool", unit='boolean', meaning=(
        "SIMAS: the final reply stated no answer the parser could read, or several "
                          "different ones (ambiguous); scored wrong, the reason in the agent's submission")),
    "answer_from": Metric(type="string", unit='label', meaning=(
        "SIMAS: which agent gave the group's final answer, first (a_1, Algorithm 1) or last "
                    "(a_n, appendix A.4) (simas.answer_from); null under cot")),
    "answer_confidence": Metric(type="float64", unit='percent (0-100)', meaning=(
        "SIMAS: confidence in percent (0-100) that the answering agent stated with the "
                          "final answer (line 'Confidence: N', appendix A.4's auxiliary metric); null when none was "
                          "stated, and for generation questions")),
}
