"""What every model of the plugin does around its build: one place for the flag checks and the
dictionary fingerprint.

:class:`ChecksOptions` is a mixin for a fairseq model class; its ``build_model`` (from a
Namespace or a Hydra config, :func:`~.hydra_args.accepts_hydra_config`)

1. runs the class's :meth:`~ChecksOptions.check_options`, which rejects a flag or a combination
   of flags that cannot work with a :class:`~fairseq_tpr.errors.ConfigError` naming the flags and
   the fix, before any module is built (so no assert or shape error deep in fairseq or torch);
2. compares the dictionary fingerprint stored in the model options, if any, with the task's
   dictionaries (:func:`check_dictionaries`);
3. builds the model (:meth:`~ChecksOptions.build_checked_model`; by default the next class's
   ``build_model``, e.g. fairseq's ``TransformerModel``);
4. stores the fingerprint of the task's dictionaries in the model options when they hold none
   (:func:`record_dictionaries`).

The model options (``args``: fairseq-train's Namespace, or the Hydra ``model`` config, written
back by ``accepts_hydra_config``) are what fairseq saves in the checkpoint, so a checkpoint of
one of the plugin's archs carries, per side, ``{side}_dictionary_fingerprint =
[sha1, number of symbols, dictionary file]``: the sha1 of the dictionary's symbols in order (the
map from token ids to words; counts do not matter) and the file it was read from. Loading it
(fairseq-generate, -interactive, -validate, the hub, anything that builds the model from the
saved options) builds the model from those options again, with the data directory's
dictionaries, and a different dictionary, of the same size too, is a ConfigError instead of
silently wrong words. Checkpoints without a fingerprint (older ones, fairseq's own archs such as
``transformer_tp_*``) load as before.
"""
import hashlib
import os
from typing import Dict, Optional

from ..errors import ConfigError
from ..modules.role_dictionary import KERNELS, DiscreteRoleBinding
from .hydra_args import accepts_hydra_config

SIDES = ("source", "target")


def fingerprint_key(side: str) -> str:
    return f"{side}_dictionary_fingerprint"


def dictionary_sha1(dictionary) -> str:
    """The sha1 of the dictionary's symbols in order (what a token id means)."""
    digest = hashlib.sha1()
    for symbol in dictionary.symbols:
        digest.update(symbol.encode("utf-8", "surrogatepass") + b"\n")
    return digest.hexdigest()


def model_arch(model) -> Optional[str]:
    """The ``--arch`` a built model keeps in its options (``args``, or a Hydra ``cfg``), or None."""
    options = getattr(model, "args", None) or getattr(model, "cfg", None)
    return getattr(options, "arch", None) or getattr(getattr(options, "model", None), "_name", None)


def task_dictionary(task, side: str):
    """The task's *side* dictionary, or None."""
    try:
        return getattr(task, f"{side}_dictionary")
    except NotImplementedError:  # FairseqTask without this side
        return None


def dictionary_file(task, side: str) -> Optional[str]:
    """The file the task read its *side* dictionary from (``DATA/dict.{lang}.txt``, or
    ``DATA/dict.txt`` for tasks without languages), or None when it cannot be told."""
    cfg = getattr(task, "cfg", None) or getattr(task, "args", None)
    data = getattr(cfg, "data", None)
    if not isinstance(data, str) or not data:
        return None
    root = data.split(os.pathsep)[0]
    lang = getattr(cfg, f"{side}_lang", None)
    path = os.path.join(root, f"dict.{lang}.txt" if lang else "dict.txt")
    return os.path.abspath(path) if os.path.isfile(path) else None


def task_fingerprints(task) -> Dict[str, list]:
    """side -> ``[sha1, number of symbols, file]`` for every dictionary the task has."""
    prints = {}
    for side in SIDES:
        dictionary = task_dictionary(task, side)
        if dictionary is not None and hasattr(dictionary, "symbols"):
            prints[side] = [dictionary_sha1(dictionary), len(dictionary), dictionary_file(task, side)]
    return prints


def stored_fingerprints(args) -> Dict[str, list]:
    """side -> the fingerprint the model options hold (from a checkpoint), for the sides that have one."""
    prints = {}
    for side in SIDES:
        value = getattr(args, fingerprint_key(side), None)
        if value is not None and len(value) == 3:
            prints[side] = list(value)
    return prints


def _describe(fingerprint) -> str:
    sha1, size, path = fingerprint
    return f"{path or 'a dictionary'} ({size} symbols, sha1 {sha1[:12]})"


def check_dictionaries(args, task) -> None:
    """A :class:`ConfigError` when the model options hold a dictionary fingerprint that the task's
    dictionaries do not match (see the module docstring)."""
    stored, current = stored_fingerprints(args), task_fingerprints(task)
    differ = [side for side in SIDES if side in stored and side in current and stored[side][0] != current[side][0]]
    if not differ:
        return
    arch = getattr(args, "arch", "?")
    pairs = "; ".join(f"{side}: trained with {_describe(stored[side])}, given {_describe(current[side])}"
                      for side in differ)
    same_size = all(stored[side][1] == current[side][1] for side in differ)
    consequence = ("the same size, so the model would load and decode wrong words" if same_size
                   else "another size")
    trained = {side: stored[side][2] for side in SIDES if side in stored and stored[side][2]}
    if trained.get("source") and trained.get("target"):
        rebinarize = f"--srcdict {trained['source']} --tgtdict {trained['target']}"
    elif trained:
        rebinarize = f"--srcdict {next(iter(trained.values()))}"
    else:
        rebinarize = "--srcdict/--tgtdict the training data's dict.*.txt"
    raise ConfigError(
        f"the model (--arch {arch}) was trained with other dictionaries than the data directory's ({pairs}): "
        f"{consequence}. Pass the data directory the model was trained on (its dict.*.txt), or binarize the "
        f"input with `fairseq-preprocess {rebinarize}`."
    )


def record_dictionaries(args, task) -> None:
    """Store the task's dictionary fingerprints in the model options, unless they hold some."""
    if stored_fingerprints(args):
        return
    for side, fingerprint in task_fingerprints(task).items():
        setattr(args, fingerprint_key(side), fingerprint)


# ----------------------------------------------------------------------------- flag checks
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


def check_role_dim(args, side: str) -> None:
    """``--{side}-attention-heads`` x ``--role-dim`` must equal ``--{side}-embed-dim`` for the
    discrete-role cells; a ConfigError that names the flags and the fix otherwise."""
    heads, dim = getattr(args, f"{side}_attention_heads"), getattr(args, f"{side}_embed_dim")
    if heads * args.role_dim != dim:
        fix = (f"set --role-dim {dim // heads}" if dim % heads == 0
               else f"choose --{side}-attention-heads dividing {dim}")
        raise ConfigError(
            f"--role-dim {args.role_dim} x --{side}-attention-heads {heads} = {heads * args.role_dim}, but "
            f"--{side}-embed-dim is {dim}: the role vector R = [R_1..R_H] is bound elementwise to the "
            f"filler (Jiang et al. Eq. 5-6), so heads x role-dim must equal the embedding size; {fix}."
        )


def check_num_roles(args, arch: str, context: str = "") -> None:
    """``--num-roles`` (N_r) and ``--role-dim`` (d_r) of the discrete-role cells must be at least 1."""
    num_roles, role_dim = getattr(args, "num_roles", None), getattr(args, "role_dim", None)
    if num_roles is None or num_roles < 1:
        raise ConfigError(f"--num-roles must be at least 1{context} (got {num_roles}): it is N_r, the number of "
                          f"role embeddings in each role dictionary of --arch {arch}; the paper uses 50.")
    if role_dim is None or role_dim < 1:
        raise ConfigError(f"--role-dim must be at least 1{context} (got {role_dim}): it is d_r, the size of a "
                          f"role embedding; heads x role-dim must equal the embedding size.")
    temperature = getattr(args, "role_temperature", 1.0)
    if not temperature > 0:  # also NaN
        raise ConfigError(f"--role-temperature must be positive{context} (got {temperature}): it divides the role "
                          f"logits before their softmax; 1 is the paper's Eq. 5.")
    scorer = getattr(args, "role_scorer", "paper")
    if scorer not in DiscreteRoleBinding.SCORERS:
        raise ConfigError(f"--role-scorer must be one of {', '.join(DiscreteRoleBinding.SCORERS)}{context} "
                          f"(got {scorer!r}).")
    kernel = getattr(args, "role_kernel", "auto")
    if kernel not in KERNELS:
        raise ConfigError(f"--role-kernel must be one of {', '.join(KERNELS)}{context} (got {kernel!r}).")
    role_init = getattr(args, "role_init", "normal")
    if role_init not in DiscreteRoleBinding.ROLE_INITS:
        raise ConfigError(f"--role-init must be one of {', '.join(DiscreteRoleBinding.ROLE_INITS)}{context} "
                          f"(got {role_init!r}).")


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
