"""The cmd engine: whole commands timed through a spawning helper."""
