"""Reference tasks: reductions."""
