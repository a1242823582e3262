"""The task's dictionaries (:func:`task_dictionary`, the file each was read from) and their
fingerprints in the model options, so that a checkpoint never decodes with another dictionary.

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

SIDES = ("source", "target")


def fingerprint_key(side: str) -> str:
    return f"{side}_dictionary_fingerprint"


def dictionary_sha1(dictionary) -> str:
    """The sha1 of the dictionary's symbols in order (what a token id means)."""
    digest = hashlib.sha1()
    for symbol in dictionary.symbols:
        digest.update(symbol.encode("utf-8", "surrogatepass") + b"\n")
    return digest.hexdigest()


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
