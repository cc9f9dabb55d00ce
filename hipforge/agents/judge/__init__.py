"""The plausibility judge (agent 5, keeps hopeless candidates off the GPU): offline holds the protocol, the
report and OfflinePlausibilityFilter (static checks); llm.LLMPlausibilityJudge asks a model."""
