"""Adapters to GitHub, Ollama and llama.cpp: the only modules that do network or model I/O."""
