"""The project's error base class, and how it reaches the user.

Every check the plugin makes raises a :class:`FairseqTprError` (or a subclass) whose message
names the offending flag, file or line and says how to fix it. When one reaches the top of a
command (``fairseq-train``, ``fairseq-generate``, ``fairseq-interactive``, ``fairseq-validate``
or a script of this package), :func:`install_excepthook` prints ``error: <message>`` on one
line of stderr and exits with status 2, without a traceback; ``FAIRSEQ_TPR_TRACEBACK=1`` in the
environment shows the full traceback instead. Any other exception, fairseq's own included,
keeps Python's usual report.
"""
import os
import sys

TRACEBACK_ENV = "FAIRSEQ_TPR_TRACEBACK"
EXIT_STATUS = 2


class FairseqTprError(Exception):
    """A user-facing error of fairseq_tpr: bad input, a bad flag or a damaged file."""


class InputError(FairseqTprError, ValueError):
    """A bad input file, line or data directory (corpora, binarized splits, trees, templates,
    image features, generate logs). The message names the file and line and says how to fix it.
    The data, corpus and scoring errors of the rooms subclass it, so one ``except InputError``
    catches every bad input."""


class CheckpointError(FairseqTprError):
    """A checkpoint file that cannot be read (truncated, empty, not a checkpoint)."""


def one_line(error: BaseException) -> str:
    """``error: <message>`` with the message's line breaks folded into spaces."""
    return "error: " + " ".join(str(error).split())


def _report(exc_type, exc, tb, previous=sys.__excepthook__):
    if not issubclass(exc_type, FairseqTprError) or os.environ.get(TRACEBACK_ENV, "") not in ("", "0"):
        return previous(exc_type, exc, tb)
    sys.stderr.write(one_line(exc) + "\n")
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe; nothing more to say
            pass
    # sys.excepthook cannot choose the exit status (Python exits 1 after it): leave now with 2
    os._exit(EXIT_STATUS)


def install_excepthook() -> None:
    """Make :class:`FairseqTprError` a one-line ``error:`` and exit status 2 at the top of any
    command (idempotent; other exceptions go to the hook that was installed before)."""
    previous = sys.excepthook
    if getattr(previous, "fairseq_tpr", False):
        return

    def hook(exc_type, exc, tb):
        _report(exc_type, exc, tb, previous)

    hook.fairseq_tpr = True
    sys.excepthook = hook
