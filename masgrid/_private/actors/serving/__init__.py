"""Serving: models on Ray Serve (vLLM through ray.serve.llm, or the CPU stand-in) and the
`serve` chat backend that reaches them by DeploymentHandle or over the OpenAI route.

Nothing here imports vLLM at module level; `deploy.serve_llm()` is the only door to it.
"""
