"""The evolver agent (a correct kernel -> faster ones): offline.OfflineEvolver, the parametric search, and
llm.LLMEvolver with selection (ShinkaEvolve's parent sampling and novelty rejection)."""
