"""What an agent is: configuration, instructions, output types, per-agent settings."""
