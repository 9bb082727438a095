"""OpenAI's Responses API, with server-side conversation state: `OpenAIResponsesModel`, and `ResponsesServer`, a stand-in on 127.0.0.1."""
