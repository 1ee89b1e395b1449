"""CooperBench: agents implement features of one repository in separate git worktrees, talking
as they go; their patches are merged and every feature's tests run (cooperbench paper)."""
