"""Reference tasks: losses."""
