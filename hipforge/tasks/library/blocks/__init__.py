"""Reference tasks: blocks."""
