"""Average the parameters of several fairseq checkpoints (the WMT recipe's last step); the library
of ``fairseq-tpr-average-checkpoints``.

:func:`checkpoint_paths` turns the command's ``--inputs``/``--last``/``--epochs`` into the files
to average: with one directory, ``--last N`` takes the N interval checkpoints
``checkpoint_<epoch>_<update>.pt`` with the highest update numbers (or, with ``--epochs``, the N
``checkpoint<epoch>.pt`` with the highest epochs, :func:`select_checkpoints`). :func:`average`
requires every checkpoint to hold the same parameter names and shapes; the result keeps the
first checkpoint's configuration and replaces its ``model`` entry by the element-wise mean
(accumulated in float64, stored in each parameter's dtype). :func:`average_checkpoints` does
both and writes the result atomically (:func:`~fairseq_tpr.checkpoint_io.atomic_write`).

Checkpoints are read with torch's default ``weights_only=True``, with fairseq's config types allowed
(:func:`~fairseq_tpr.checkpoint_safety.allow_fairseq_checkpoints`, called before the first load). A file that cannot be read is a
:class:`~fairseq_tpr.errors.CheckpointError` saying what is wrong with it; inputs that do not go
together (other parameters, too few checkpoints, ``--last`` without a directory) are a
:class:`~fairseq_tpr.errors.ConfigError`; a missing input an :class:`~fairseq_tpr.errors.InputError`.
"""
import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import torch

from .checkpoint_io import atomic_write, diagnose
from .checkpoint_safety import allow_fairseq_checkpoints
from .errors import CheckpointError, ConfigError, InputError

_UPDATE = re.compile(r"^checkpoint_\d+_(\d+)\.pt$")
_EPOCH = re.compile(r"^checkpoint(\d+)\.pt$")


def select_checkpoints(directory: Path, last: int, epochs: bool = False) -> List[Path]:
    """The ``last`` newest interval (or epoch) checkpoints in ``directory``, newest first."""
    pattern = _EPOCH if epochs else _UPDATE
    found = sorted(((int(m.group(1)), p) for p in directory.iterdir() if (m := pattern.match(p.name))), reverse=True)
    kind = "checkpoint<epoch>.pt" if epochs else "checkpoint_<epoch>_<update>.pt"
    if len(found) < last:
        raise ConfigError(
            f"{directory} holds {len(found)} {kind} file(s), --last asks for {last}; "
            + ("train with --save-interval-updates and --keep-interval-updates >= N" if not epochs
               else "keep epoch checkpoints (no --no-epoch-checkpoints)"))
    return [p for _, p in found[:last]]


def checkpoint_paths(inputs: Sequence, last: Optional[int] = None, epochs: bool = False) -> List[Path]:
    """The checkpoint files that ``--inputs`` (files, or one directory with ``--last``) names."""
    inputs = [Path(p) for p in inputs]
    for p in inputs:
        if not p.exists():
            raise InputError(f"{p} does not exist")
    if len(inputs) == 1 and inputs[0].is_dir():
        if not last:
            raise ConfigError("--inputs is a directory: say how many checkpoints to average with --last N")
        return select_checkpoints(inputs[0], last, epochs)
    if last:
        raise ConfigError("--last needs --inputs to be one directory")
    return inputs


def _load(path: Path) -> Dict:
    allow_fairseq_checkpoints()  # fairseq's config types, as registering the plugin allows them
    try:
        state = torch.load(path, map_location="cpu")
    except Exception as err:  # noqa: BLE001  (re-raised unchanged unless the file is damaged)
        damage = diagnose(path, err)
        if damage is None:
            raise
        raise CheckpointError(f"checkpoint {path} is {damage}; leave it out of --inputs") from err
    if not isinstance(state, dict) or "model" not in state:
        raise CheckpointError(f"{path} is not a fairseq checkpoint (no 'model' entry)")
    return state


def average(paths: Sequence[Path]) -> Dict:
    """The first checkpoint's state with ``model`` replaced by the mean over ``paths``."""
    sums, first = None, None
    for path in paths:
        state = _load(path)
        model = state["model"]
        if sums is None:
            first, sums = state, {k: v.double().clone() for k, v in model.items()}
            continue
        if set(model) != set(sums):
            diff = sorted(set(model) ^ set(sums))[:5]
            raise ConfigError(f"{path} has other parameters than {paths[0]} (e.g. {diff}): average checkpoints of one run")
        for name, value in model.items():
            if value.shape != sums[name].shape:
                raise ConfigError(f"{path}: parameter {name} has shape {tuple(value.shape)}, "
                                  f"{paths[0]} has {tuple(sums[name].shape)}: average checkpoints of one run")
            sums[name] += value.double()
    first["model"] = {k: (v / len(paths)).to(first["model"][k].dtype) for k, v in sums.items()}
    return first


def average_checkpoints(inputs: Sequence, output, last: Optional[int] = None, epochs: bool = False) -> List[Path]:
    """Average the checkpoints that ``inputs``/``last``/``epochs`` name (:func:`checkpoint_paths`)
    into ``output``, written atomically (a kill mid-write leaves no partial file); returns the
    averaged paths. Nothing is written when a check fails."""
    paths = checkpoint_paths(inputs, last, epochs)
    state = average(paths)
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    atomic_write(output, lambda f: torch.save(state, f))
    return paths
