"""The project's error base class.

Every check the plugin makes raises a :class:`FairseqTprError` (or a subclass) whose message
names the offending flag, file or line and says how to fix it.
"""


class FairseqTprError(Exception):
    """A user-facing error of fairseq_tpr: bad input, a bad flag or a damaged file."""


class CheckpointError(FairseqTprError):
    """A checkpoint file that cannot be read (truncated, empty, not a checkpoint)."""
