"""Anthropic's Messages API: `AnthropicModel`."""
