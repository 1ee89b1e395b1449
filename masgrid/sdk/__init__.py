"""What a benchmark family builds its analysis on, besides its tasks (`masgrid.task_api`):
figures, intervals, information replay and LLM-judge settings. Families import these, never
`masgrid._private` or another family's modules, so one written outside masgrid can do all
that the built-in ones do (docs/families.md)."""
