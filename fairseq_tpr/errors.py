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

Catch the narrowest class that fits; add no room-specific classes. How one reaches the user at
the top of a command, without a traceback (``FAIRSEQ_TPR_TRACEBACK=1`` in the environment shows the
full traceback instead), and always through the interpreter's normal exit, so that ``atexit``
handlers run, other threads' ``finally`` blocks finish and every buffered file is flushed:

* a console script of this package (``fairseq-tpr-*``, and ``python -m fairseq_tpr.ROOM.NAME``):
  :func:`command` wraps its ``main``, prints ``error: <message>`` on one line of stderr and leaves
  with ``sys.exit(2)``;
* fairseq's own commands (``fairseq-train``, ``fairseq-generate``, ... with ``--user-dir
  fairseq_tpr``) and any other program that registered the plugin: the hook of
  :func:`install_excepthook` prints the same line; Python then exits as after any uncaught
  exception, with status 1.

Any other exception, fairseq's own and the internal consistency checks that mean a bug included,
keeps Python's usual report, but for one: a ``BrokenPipeError`` raised because the reader of a
piped stdout has gone (``fairseq-tpr-roles ... | head``) ends the command quietly, with status 141
(as a Unix tool killed by ``SIGPIPE``) in a console script, 1 elsewhere.
"""
import functools
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


def _traceback_wanted() -> bool:
    return os.environ.get(TRACEBACK_ENV, "") not in ("", "0")


def _flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe; nothing more to say
            pass


def _silence_stdout() -> None:
    """Point stdout's file descriptor at the null device: the reader has gone, and the
    interpreter's last flush of the pipe would fail again (the Python documentation's recipe for
    ``SIGPIPE``)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):
        pass


def _report(exc_type, exc, tb, previous=sys.__excepthook__):
    if issubclass(exc_type, BrokenPipeError) and _stdout_reader_gone():
        _silence_stdout()  # nobody reads the output any more: no report
        return
    if not issubclass(exc_type, FairseqTprError) or _traceback_wanted():
        return previous(exc_type, exc, tb)
    _flush_streams()
    sys.stderr.write(one_line(exc) + "\n")
    _flush_streams()
    # Python now ends the process as after any uncaught exception: atexit handlers, flushed files, status 1


def install_excepthook() -> None:
    """Make :class:`FairseqTprError` a one-line ``error:`` at the top of any program that registered
    the plugin (idempotent; other exceptions go to the hook that was installed before)."""
    previous = sys.excepthook
    if getattr(previous, "fairseq_tpr", False):
        return

    def hook(exc_type, exc, tb):
        _report(exc_type, exc, tb, previous)

    hook.fairseq_tpr = True
    sys.excepthook = hook


def command(main):
    """The console-script entry of ``main`` (``main(argv=None)`` or ``main()``): its return value
    is the exit status; a :class:`FairseqTprError` is one ``error:`` line and ``sys.exit(2)``; a
    closed stdout pipe a quiet ``sys.exit(141)``. ``main`` itself still raises (for callers in
    Python and the tests)."""

    @functools.wraps(main)
    def console(argv=None):
        try:
            return main() if argv is None else main(argv)
        except FairseqTprError as error:
            if _traceback_wanted():
                raise
            _flush_streams()
            sys.stderr.write(one_line(error) + "\n")
            sys.exit(EXIT_STATUS)
        except BrokenPipeError:
            if not _stdout_reader_gone():
                raise
            _silence_stdout()
            sys.exit(128 + signal.SIGPIPE)

    return console
