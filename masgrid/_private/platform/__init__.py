"""The platform, by job: run/ (a single run), sweeps/ (grids on Ray), results/ (the tables),
cluster/ (Ray head and model endpoints), judging/ (LLM judges), commands/ (the command line)."""
