"""Chat models: the embedded llama.cpp model, hosted OpenAI-compatible models, scripts."""
