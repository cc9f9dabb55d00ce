"""The agents of the pipeline; each has one interface with an offline and an LLM implementation."""
