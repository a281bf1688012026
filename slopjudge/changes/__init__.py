"""Reading changes: git, diffs, proposed edits, apply_patch, tool-call matching."""
