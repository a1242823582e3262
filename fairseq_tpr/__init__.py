"""fairseq_tpr: Tensor-Product-Representation models for fairseq.

Use with ``--user-dir fairseq_tpr`` (or ``import fairseq_tpr``).

Registration, :func:`register`: registers every architecture, criterion, task and scorer with
fairseq explicitly (fairseq's ``--user-dir`` only imports ``models/`` and ``tasks/`` by itself),
lets fairseq checkpoints load under torch's default ``weights_only=True`` loading
(``checkpoint_safety.py``) and fixes the fairseq bugs listed in ``fairseq_fixes/``. It runs once
per process, always together with fairseq, never without it:

* ``import fairseq_tpr`` when fairseq is already imported (``fairseq-train --user-dir
  fairseq_tpr``; ``import fairseq`` first) registers at once;
* otherwise the import is light (no torch, no fairseq) and leaves a one-shot import hook on
  ``sys.meta_path``: the first ``import fairseq`` of the process, whoever makes it, registers the
  plugin before that import returns. So ``import fairseq_tpr`` followed by ``from fairseq.models
  import ARCH_MODEL_REGISTRY`` sees the plugin's archs, as does any module of this package that
  imports fairseq. The first ``import torch`` likewise allows fairseq's checkpoint types;
* the console scripts (``cli/``) parse their arguments with nothing but the standard library
  (``--help`` and a usage error answer at once) and call :func:`register` before they do any work.

The plugin's error hook (:func:`fairseq_tpr.errors.install_excepthook`: a ``FairseqTprError``
becomes one ``error:`` line, exit 2) is installed by every import of the package.
"""
import logging
import sys

from .errors import install_excepthook

__version__ = "0.1.0"


class _OptionalTensorboardNotice(logging.Filter):
    """Drops fairseq's import-time "Please install tensorboardX" line (``fairseq/tasks/text_to_speech.py``):
    tensorboardX is optional (``pip install fairseq_tpr[logging]`` for ``--tensorboard-logdir``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Please install tensorboardX" not in record.getMessage()


# before fairseq's first import; under fairseq-train fairseq is imported (and has logged) already
logging.getLogger("fairseq.tasks.text_to_speech").addFilter(_OptionalTensorboardNotice())
install_excepthook()  # a FairseqTprError at the top of any command: one "error:" line, exit 2

_state = {"checkpoints_allowed": False, "registered": False}


def _allow_fairseq_checkpoints() -> None:
    if not _state["checkpoints_allowed"]:
        from .checkpoint_safety import allow_fairseq_checkpoints

        allow_fairseq_checkpoints()
        _state["checkpoints_allowed"] = True


def register() -> None:
    """Register the plugin with fairseq (imports torch and fairseq; idempotent). Called by the
    import hook, by the package import when fairseq is loaded already, and by the console scripts
    after parsing their arguments."""
    if _state["registered"]:
        return
    _state["registered"] = True  # before the imports below: their own "import fairseq" must not re-enter
    _HOOK.remove()
    try:
        _allow_fairseq_checkpoints()
        from .fairseq_fixes import apply_all as apply_fairseq_fixes

        apply_fairseq_fixes()  # fairseq bugs that change results (see fairseq_fixes/)
        from . import criterions, models  # noqa: F401  (registration)
        from . import scoring  # noqa: F401  (registers --scoring rouge)
        from . import tasks  # noqa: F401
    except BaseException:
        _state["registered"] = False
        raise


class _AfterImport:
    """A ``sys.meta_path`` finder that finds nothing itself; it lets the other finders find a module
    and wraps the loader's ``exec_module``. After ``torch`` or ``fairseq`` has executed, it runs that
    module's action, right away or, while a module of this package is still executing (one that
    imported torch or fairseq: the registration would import it half-made), as soon as the
    outermost such module has finished, still inside its import statement. Removed by
    :func:`register`."""

    def __init__(self, actions):
        self.actions = actions  # {"torch": ..., "fairseq": ...}, each run once
        self.pending = []
        self.executing = 0  # modules of this package executing now (nested imports)

    def install(self):
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)

    def remove(self):
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        self.pending.clear()

    def _run_pending(self):
        while self.pending and not self.executing:
            self.pending.pop(0)()

    def find_spec(self, name, path=None, target=None):
        ours = name.startswith(__name__ + ".")
        if name not in self.actions and not ours:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module") or "exec_module" in vars(loader):
            return spec

        def exec_module(module):
            del loader.exec_module  # back to the loader's own method
            if ours:
                self.executing += 1
                try:
                    loader.exec_module(module)
                finally:
                    self.executing -= 1
            else:
                loader.exec_module(module)
                self.pending.append(self.actions.pop(name))
            self._run_pending()

        loader.exec_module = exec_module
        return spec


_HOOK = _AfterImport({"torch": _allow_fairseq_checkpoints, "fairseq": register})

if "fairseq" in sys.modules:  # --user-dir: fairseq imports the plugin
    register()
else:
    if "torch" in sys.modules:
        _allow_fairseq_checkpoints()
        del _HOOK.actions["torch"]
    _HOOK.install()
