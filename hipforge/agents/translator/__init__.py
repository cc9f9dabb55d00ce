"""The translator agent (PyTorch reference -> first correct HIP kernel): offline.OfflineTranslator, the
deterministic compiler, and llm.LLMTranslator. No re-exports, so importing the offline one loads no LLM code."""
