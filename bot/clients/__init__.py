"""Adapters to GitHub, Ollama, OpenAI-compatible servers and llama.cpp: the only modules that do
network or model I/O."""
