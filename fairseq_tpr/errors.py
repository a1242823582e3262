"""The project's error classes, and how they reach the user.

Every check the plugin makes raises a :class:`FairseqTprError` whose message names the offending
flag, file or line and says how to fix it. It is always one of four subclasses, chosen by what
the user has to fix:

* :class:`InputError` (also a ``ValueError``): a bad input file, line or data directory: a raw
  corpus, a binarized split, a tree, a template, caption or image-feature file, a generate log
  or label file to score or analyse, a missing input path.
* :class:`ConfigError` (also a ``ValueError``): a bad flag value or a combination of flags that
  does not work, or a checkpoint that does not fit the data or the command (another ``--arch``,
  ``--task`` or dictionary); the message names the flag and the fix.
* :class:`CheckpointError`: a checkpoint file that cannot be read (empty, truncated, damaged,
  not a checkpoint of the tool that reads it).
* :class:`DependencyError` (also a ``RuntimeError``): an optional external tool or package is
  missing or cannot run (Java, Perl, pycocoevalcap, ``fairseq-preprocess``, the Mathematics
  Dataset generator, ``apt-get``); the message says what to install. The scorers of
  ``fairseq-tpr-score`` that raise it are skipped while the others run.

Catch the narrowest class that fits; add no room-specific classes. When one reaches the top of
a command (``fairseq-train``, ``fairseq-generate``, ``fairseq-interactive``, ``fairseq-validate``
or a script of this package), :func:`install_excepthook` prints ``error: <message>`` on one
line of stderr and exits with status 2, without a traceback; ``FAIRSEQ_TPR_TRACEBACK=1`` in the
environment shows the full traceback instead. Any other exception, fairseq's own and the
internal consistency checks that mean a bug included, keeps Python's usual report, but for one:
a ``BrokenPipeError`` raised because the reader of a piped stdout has gone (``fairseq-tpr-roles
... | head``) ends the command quietly with status 141, as a Unix tool killed by ``SIGPIPE`` does.
"""
import os
import select
import signal
import sys

TRACEBACK_ENV = "FAIRSEQ_TPR_TRACEBACK"
EXIT_STATUS = 2


class FairseqTprError(Exception):
    """A user-facing error of fairseq_tpr; raise one of the subclasses below."""


class InputError(FairseqTprError, ValueError):
    """A bad input file, line or data directory (corpora, binarized splits, trees, templates,
    image features, generate logs, label files). The message names the file and line and says
    how to fix it."""


class ConfigError(FairseqTprError, ValueError):
    """A bad flag value, a combination of flags that does not work, or a checkpoint that does
    not fit the data or the command. The message names the flag and how to fix it."""


class CheckpointError(FairseqTprError):
    """A checkpoint file that cannot be read (truncated, empty, damaged, not a checkpoint)."""


class DependencyError(FairseqTprError, RuntimeError):
    """An optional external tool or package is missing or cannot run; the message says what to
    install."""


def one_line(error: BaseException) -> str:
    """``error: <message>`` with the message's line breaks folded into spaces."""
    return "error: " + " ".join(str(error).split())


def _stdout_reader_gone() -> bool:
    """True when stdout is a pipe (or socket) whose reading end is closed: poll reports an error
    condition on it. Any doubt (no file descriptor, no poll on this platform) answers False."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):
        return False


def _report(exc_type, exc, tb, previous=sys.__excepthook__):
    if issubclass(exc_type, BrokenPipeError) and _stdout_reader_gone():
        os._exit(128 + signal.SIGPIPE)  # nobody reads the output any more; exit as if killed by SIGPIPE
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
