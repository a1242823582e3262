"""What every model of the plugin does around its build: its flag checks, and the dictionary
fingerprint (:mod:`.dictionaries`).

:class:`ChecksOptions` is a mixin for a fairseq model class; its ``build_model`` (from a
Namespace or a Hydra config, :func:`~.hydra_args.accepts_hydra_config`)

1. runs the class's :meth:`~ChecksOptions.check_options`, which rejects a flag or a combination
   of flags that cannot work with a :class:`~fairseq_tpr.errors.ConfigError` naming the flags and
   the fix, before any module is built (so no assert or shape error deep in fairseq or torch);
2. compares the dictionary fingerprint stored in the model options, if any, with the task's
   dictionaries (:func:`~.dictionaries.check_dictionaries`);
3. builds the model (:meth:`~ChecksOptions.build_checked_model`; by default the next class's
   ``build_model``, e.g. fairseq's ``TransformerModel``);
4. stores the fingerprint of the task's dictionaries in the model options when they hold none
   (:func:`~.dictionaries.record_dictionaries`).
"""
from typing import Optional

from ..errors import ConfigError
from .dictionaries import check_dictionaries, record_dictionaries
from .hydra_args import accepts_hydra_config


def model_arch(model) -> Optional[str]:
    """The ``--arch`` a built model keeps in its options (``args``, or a Hydra ``cfg``), or None."""
    options = getattr(model, "args", None) or getattr(model, "cfg", None)
    return getattr(options, "arch", None) or getattr(getattr(options, "model", None), "_name", None)


def refuse_options(args, options, where: str) -> None:
    """A ConfigError ``--flag is not supported {where}; drop the flag.`` for the first of ``options``
    (option names, e.g. ``cross_self_attention``) that is set in ``args``: fairseq options a model's
    cells do not honour."""
    for opt in options:
        if getattr(args, opt, False):
            raise ConfigError(f"--{opt.replace('_', '-')} is not supported {where}; drop the flag.")


def check_heads_divide(args, sides=("encoder", "decoder")) -> None:
    """``--{side}-embed-dim`` must be a multiple of ``--{side}-attention-heads`` (each head gets
    ``embed-dim / heads`` dimensions); checked here, before fairseq's assert in MultiheadAttention."""
    for side in sides:
        heads, dim = getattr(args, f"{side}_attention_heads", None), getattr(args, f"{side}_embed_dim", None)
        if heads is None or dim is None:
            continue
        if heads < 1:
            raise ConfigError(f"--{side}-attention-heads must be at least 1 (got {heads}).")
        if dim % heads:
            fits = [h for h in range(1, min(dim, 64) + 1) if dim % h == 0 and h <= 2 * heads][-3:]
            raise ConfigError(
                f"--{side}-embed-dim {dim} is not divisible by --{side}-attention-heads {heads}: every head gets "
                f"embed-dim / heads dimensions. Choose --{side}-attention-heads dividing {dim} "
                f"(e.g. {', '.join(map(str, fits))}) or a multiple of {heads} for --{side}-embed-dim "
                f"(e.g. {dim - dim % heads or heads} or {dim - dim % heads + heads})."
            )


class ChecksOptions:
    """Mixin for a fairseq model class (module docstring): ``build_model`` runs
    :meth:`check_options`, checks and records the dictionary fingerprint, and builds the model
    with :meth:`build_checked_model`."""

    @classmethod
    @accepts_hydra_config
    def build_model(cls, args, task):
        cls.check_options(args, task)
        check_dictionaries(args, task)
        model = cls.build_checked_model(args, task)
        record_dictionaries(args, task)
        return model

    @classmethod
    def check_options(cls, args, task) -> None:
        """Reject option combinations that cannot work with a ConfigError naming the flag and the fix."""

    @classmethod
    def build_checked_model(cls, args, task):
        """The model's own build; by default the ``build_model`` of the next class (fairseq's)."""
        return super(ChecksOptions, cls).build_model(args, task)
