"""Reference tasks: elementwise."""
