"""The confidence the answering agent states with the group's final answer (appendix A.4).

The paper's evaluator records "auxiliary metrics, such as confidence scores" next to
accuracy, without saying how a confidence is obtained. masgrid's reading: the final-answer
request asks the answering agent for a line `Confidence: <0-100>` just before its
`Final answer:` line, and this module reads it. The runs column `answer_confidence` holds
the number in percent, or null when the reply states none (or one outside 0..100): a
missing confidence is never guessed. The last such line of the reply counts.
"""

from __future__ import annotations

import re

#: "Confidence: 80", "**Confidence:** 80%", "confidence = 72.5" at the start of a line
_CONFIDENCE = re.compile(r"^[\s*_>#-]*confidence[\s*_]*[:=][\s*_]*(\d{1,3}(?:\.\d+)?)\s*%?",
                         re.IGNORECASE | re.MULTILINE)


def parse_confidence(text: str | None) -> float | None:
    """The stated confidence in percent (0..100), or None when the text states none."""
    found = _CONFIDENCE.findall(text or "")
    if not found:
        return None
    value = float(found[-1])
    return value if 0.0 <= value <= 100.0 else None
