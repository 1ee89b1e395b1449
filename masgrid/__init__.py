"""masgrid: a Ray-distributed platform for multi-agent LLM coordination benchmarks."""

__version__ = "0.1.0"
