"""AgentsNet: five distributed-computing problems on generated graphs (agentsnet paper)."""
