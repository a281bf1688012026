"""The one error type a person sees as a single line, never a traceback."""


class SlopjudgeError(Exception):
    """Bad input or an unusable setting; ``str()`` is the whole message (one line)."""


class ChangesetError(SlopjudgeError):
    """A changeset could not be read; the message is one line."""
