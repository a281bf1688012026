"""Judging: templates, verdicts, the verifier, budgets and usage, runners and harnesses."""
