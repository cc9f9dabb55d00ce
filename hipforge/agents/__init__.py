"""The agents of the pipeline, one subpackage per role (translator, evolver, judge, summarizer), each with
its offline.py and llm.py side by side; factory.py picks one per role from configuration."""
