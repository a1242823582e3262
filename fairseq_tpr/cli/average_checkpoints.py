"""Average the parameters of several fairseq checkpoints (the WMT recipe's last step).

    python -m fairseq_tpr.cli.average_checkpoints --inputs checkpoints/wmt --last 5 --output checkpoints/wmt/avg5.pt
    python -m fairseq_tpr.cli.average_checkpoints --inputs a.pt b.pt c.pt --output avg.pt

With a directory, ``--last N`` takes the N interval checkpoints ``checkpoint_<epoch>_<update>.pt``
with the highest update numbers (or, with ``--epochs``, the N ``checkpoint<epoch>.pt`` with the
highest epochs). Every checkpoint must hold the same parameter names and shapes; the output
keeps the first checkpoint's configuration and replaces its ``model`` entry by the element-wise
mean (accumulated in float64, stored in each parameter's dtype). Checkpoints are read with
torch's default ``weights_only=True`` (``import fairseq_tpr`` allows fairseq's config types).
"""
import argparse
import re
import sys
from pathlib import Path

import torch

import fairseq_tpr  # noqa: F401  (registers the safe globals for weights_only loading)
from fairseq_tpr.checkpoint_io import atomic_write
from fairseq_tpr.errors import CheckpointError, ConfigError, FairseqTprError, InputError

_UPDATE = re.compile(r"^checkpoint_\d+_(\d+)\.pt$")
_EPOCH = re.compile(r"^checkpoint(\d+)\.pt$")


def select_checkpoints(directory: Path, last: int, epochs: bool):
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


def average(paths):
    """The first checkpoint's state with ``model`` replaced by the mean over ``paths``."""
    sums, first = None, None
    for path in paths:
        state = torch.load(path, map_location="cpu")
        if "model" not in state:
            raise CheckpointError(f"{path} is not a fairseq checkpoint (no 'model' entry)")
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", nargs="+", required=True, help="checkpoint files, or one directory with --last")
    parser.add_argument("--last", type=int, help="with a directory: average the N newest interval checkpoints")
    parser.add_argument("--epochs", action="store_true", help="with --last: use checkpoint<epoch>.pt files")
    parser.add_argument("--output", required=True)
    args = parser.parse_args(argv)
    try:
        inputs = [Path(p) for p in args.inputs]
        for p in inputs:
            if not p.exists():
                raise InputError(f"{p} does not exist")
        if len(inputs) == 1 and inputs[0].is_dir():
            if not args.last:
                raise ConfigError("--inputs is a directory: say how many checkpoints to average with --last N")
            paths = select_checkpoints(inputs[0], args.last, args.epochs)
        else:
            if args.last:
                raise ConfigError("--last needs --inputs to be one directory")
            paths = inputs
        state = average(paths)
    except FairseqTprError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    atomic_write(args.output, lambda f: torch.save(state, f))  # a kill mid-write leaves no partial file
    print(f"averaged {len(paths)} checkpoints -> {args.output}: " + ", ".join(p.name for p in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
