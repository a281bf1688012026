"""The slopjudge CLI commands, one module each; ``_shared`` holds what they share."""
