"""LLM judges over recorded runs: the judge's model, and one runner for every family's judge."""
