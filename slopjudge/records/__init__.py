"""Records: the event log, prompts, verdict caches and their signatures, agreement, cost."""
