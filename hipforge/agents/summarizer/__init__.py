"""The summarizer agent (failures -> lessons for prompts): offline holds the clustering and
OfflineSummarizer; llm.LLMSummarizer rewrites the same clusters into advice."""
