"""Reference tasks: conv."""
