"""HTTP plumbing shared by the adapters that talk to a server: attempt limits, retries and backoff, the send loop, server-sent events. Only the adapters import it."""
