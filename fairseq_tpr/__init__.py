"""fairseq_tpr: Tensor-Product-Representation models for fairseq.

Use it as any fairseq user-dir: ``fairseq-train DATA --user-dir fairseq_tpr --arch tp_transformer_d
...`` (likewise ``fairseq-generate``, ``fairseq-interactive``, ``fairseq-validate``,
``fairseq-eval-lm`` and ``fairseq-hydra-train`` with ``common.user_dir``).

Registration, :func:`register` (idempotent): registers every architecture, criterion, task and the
``--scoring rouge`` scorer with fairseq, lets fairseq checkpoints load under torch's default
``weights_only=True`` loading (``checkpoint_safety.py``), installs the fixes of
``fairseq_fixes/`` and the one-line ``error:`` hook of :mod:`fairseq_tpr.errors`. It runs

* when fairseq loads the plugin: ``--user-dir`` imports this package (which registers nothing: it
  stays light for the console scripts' ``--help``), then the files of ``tasks/`` and of ``models/``,
  whose ``__init__`` only calls :func:`register` (fairseq's hooks into a user dir);
* when a Python program calls ``fairseq_tpr.register()``, or loads a model with
  :func:`fairseq_tpr.hub.from_pretrained` (which registers first), or imports anything of
  ``fairseq_tpr.models`` or ``fairseq_tpr.tasks``;
* in the console scripts (``cli/``), after they have parsed their arguments.

:func:`register` is the one entry point and holds the one list of the modules that register something
with fairseq; no other ``__init__`` imports them.

``import fairseq_tpr`` itself is light (no torch, no fairseq) and changes nothing in the process.
"""
__version__ = "0.1.0"

_state = {"registered": False}


def register() -> None:
    """Register the plugin with fairseq (imports torch and fairseq; idempotent): the error hook,
    the checkpoint types, fairseq's fixes, then the criterions, models, scorer and tasks."""
    if _state["registered"]:
        return
    _state["registered"] = True  # first: importing models/ and tasks/ below runs their __init__, which call it
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
        # every module that registers something with fairseq (criterions, models and presets, the scorer, tasks)
        from .criterions import (cross_entropy_with_roles, extractive_bce,  # noqa: F401
                                 label_smoothed_cross_entropy_with_roles, label_smoothed_cross_entropy_with_template_mse)
        from .models import (atpl, discourse_synthesizer, matched_transformers, nic, sttr, tp_transformer,  # noqa: F401
                             tp_transformer_d, tp_transformer_lm)
        from .scoring import fairseq_rouge  # noqa: F401
        from .tasks import extractive_summarization, image_captioning, template_summarization  # noqa: F401
    except BaseException:
        _state["registered"] = False
        raise


class _OptionalTensorboardNotice:
    """A logging filter: drops fairseq's import-time "Please install tensorboardX" line
    (``fairseq/tasks/text_to_speech.py``); tensorboardX is optional (``pip install
    fairseq_tpr[logging]`` for ``--tensorboard-logdir``)."""

    def filter(self, record) -> bool:
        return "Please install tensorboardX" not in record.getMessage()
