"""fairseq_tpr: Tensor-Product-Representation models for fairseq.

Use it as any fairseq user-dir: ``fairseq-train DATA --user-dir fairseq_tpr --arch tp_transformer_d
...`` (likewise ``fairseq-generate``, ``fairseq-interactive``, ``fairseq-validate``,
``fairseq-eval-lm`` and ``fairseq-hydra-train`` with ``common.user_dir``).

Registration, :func:`register` (idempotent): registers every architecture, criterion, task and the
``--scoring rouge`` scorer with fairseq, lets fairseq checkpoints load under torch's default
``weights_only=True`` loading (``checkpoint_safety.py``), installs the fixes of
``fairseq_fixes/`` and the one-line ``error:`` hook of :mod:`fairseq_tpr.errors`. It runs

* when fairseq loads the plugin: ``--user-dir`` imports this package and then its ``models/`` and
  ``tasks/``, whose ``__init__`` calls :func:`register` (a plain import, nothing else);
* when a Python program calls ``fairseq_tpr.register()``, or loads a model with
  :func:`fairseq_tpr.hub.from_pretrained` (which registers first), or imports ``fairseq_tpr.models``
  or ``fairseq_tpr.tasks``;
* in the console scripts (``cli/``), after they have parsed their arguments.

``import fairseq_tpr`` itself is light (no torch, no fairseq) and changes nothing in the process.
"""
__version__ = "0.1.0"

_state = {"registered": False}


def register() -> None:
    """Register the plugin with fairseq (imports torch and fairseq; idempotent): the error hook,
    the checkpoint types, fairseq's fixes, then the criterions, models, scorer and tasks."""
    if _state["registered"]:
        return
    _state["registered"] = True  # first: models/ and tasks/ call register() while this imports them
    try:
        import logging

        from .errors import install_excepthook

        install_excepthook()  # a FairseqTprError at the top of fairseq's commands: one "error:" line
        # fairseq logs "Please install tensorboardX" when its text_to_speech task is imported (the optional
        # [logging] extra); dropped here when fairseq is imported after this line (the console scripts)
        logging.getLogger("fairseq.tasks.text_to_speech").addFilter(_OptionalTensorboardNotice())
        from .checkpoint_safety import allow_fairseq_checkpoints

        allow_fairseq_checkpoints()
        from .fairseq_fixes import apply_all as apply_fairseq_fixes

        apply_fairseq_fixes()  # fairseq_fixes/: results, checkpoints, distributed, precision, speed
        from . import criterions, models, scoring, tasks  # noqa: F401  (the registrations)
    except BaseException:
        _state["registered"] = False
        raise


class _OptionalTensorboardNotice:
    """A logging filter: drops fairseq's import-time "Please install tensorboardX" line
    (``fairseq/tasks/text_to_speech.py``); tensorboardX is optional (``pip install
    fairseq_tpr[logging]`` for ``--tensorboard-logdir``)."""

    def filter(self, record) -> bool:
        return "Please install tensorboardX" not in record.getMessage()
