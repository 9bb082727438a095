"""OpenAI Chat Completions, the API every OpenAI-compatible server speaks: `OpenAIModel`."""
