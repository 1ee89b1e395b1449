"""Agent actors and what they host: chat backends, scripted policies, Serve deployments."""
