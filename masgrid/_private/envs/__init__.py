"""What agents act on: communication protocols and benchmark tasks.

This layer imports nothing of masgrid outside itself (bar `masgrid._private.resources`), so tasks
and protocols can be used to generate, score and re-score without Ray.
"""
