"""The training loop that ATPL's POS tagger (:mod:`.tagger`) and constituency parser
(:mod:`.parser`) share: Adam with gradient clipping, one validation per epoch, early stopping; and
their results table (:func:`results_markdown`).

:func:`train_early_stopping` keeps the epoch with the best validation score (token accuracy for
the tagger, EVALB F1 for the parser); an equal score with a lower validation loss counts as
better. It stops after ``patience`` epochs without a better one, saves the best epoch through
the caller's ``save_best`` (``checkpoint_best.pt``, written atomically by the caller's
``save_checkpoint``), and gives back the model with the best epoch's weights. Progress goes to
stderr: a tqdm bar over the epochs and one line per epoch.

Resuming (``last_path``, the CLIs' ``SAVE_DIR/checkpoint_last.pt``): after every epoch the whole
training state is written atomically: weights, Adam's state, the shuffling ``random.Random`` and
torch's CPU generator (dropout), the epoch, the best epoch's validation and weights, and the count
of epochs without a better one. A run that finds the file continues after its epoch, so an
interrupted run ends with the same weights, bit for bit on CPU, as one that was never stopped
(``tests/test_grammar_resume.py``); a run that had stopped early only reloads its best epoch.
``run_key`` (model configuration, data files, seed, learning rate, batch size) is stored with it
and must match: a different one is a ConfigError naming the file, never a silent mix of two runs.
``--max-epochs`` and ``--patience`` may change between the two calls (to train longer).
"""
import json
import math
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Tuple

import torch

from ..checkpoint_io import atomic_write
from ..errors import CheckpointError, ConfigError

LAST_FORMAT = "fairseq_tpr.grammar.checkpoint_last/1"


def optimizer_step(model, optimizer, loss, clip_norm: float) -> None:
    """One update from ``loss``: backward, the gradient norm clipped to ``clip_norm`` (0: no clipping), step."""
    optimizer.zero_grad()
    loss.backward()
    if clip_norm > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
    optimizer.step()


@dataclass
class Validation:
    """One epoch's validation: ``score`` (higher is better, a fraction) picks the best epoch,
    ``loss`` breaks its ties; ``detail`` follows the score on the epoch line."""

    score: float
    loss: float
    detail: str = ""


def _load_last(path: Path, run_key) -> dict:
    """The training state of ``checkpoint_last.pt`` (module docstring), checked against ``run_key``."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001  (truncated, not a zip, ...)
        from ..checkpoint_io import diagnose

        what = diagnose(path, e) or f"unreadable ({type(e).__name__}: {e})"
        raise CheckpointError(f"{path}: {what}; delete it to train from the start") from None
    if not isinstance(state, dict) or state.get("format") != LAST_FORMAT:
        raise CheckpointError(f"{path}: not a checkpoint_last.pt of this trainer (format "
                              f"{state.get('format') if isinstance(state, dict) else type(state).__name__!r}); "
                              "delete it or use another --save-dir")
    if state["run"] != run_key:
        diff = sorted(k for k in set(state["run"]) | set(run_key) if state["run"].get(k) != run_key.get(k))
        raise ConfigError(f"{path}: saved by a run with other settings ({', '.join(diff)} differ); resume with "
                          "the same flags and data, or delete it / use another --save-dir to start a new run")
    return state


def train_early_stopping(model, train_epoch: Callable[[torch.optim.Optimizer, random.Random], Tuple[float, str]],
                         validate: Callable[[], Validation], save_best: Optional[Callable[[int, float], None]], *,
                         seed: int, max_epochs: int, patience: int, lr: float, progress: bool,
                         score_name: str, score_key: str, score_unit: str = "",
                         last_path=None, run_key: Optional[dict] = None):
    """Train ``model`` with early stopping (module docstring); returns ``(model with the best
    epoch's weights, best epoch, its validation score)``.

    ``train_epoch(optimizer, rng)`` runs one pass over the training data (shuffled with ``rng``,
    seeded with ``seed``) and returns ``(mean loss, detail for the epoch line)``; ``validate()``
    returns a :class:`Validation`; ``save_best(epoch, score)`` (or None) saves a new best epoch.
    The score is shown as ``{score_name} {100 * score:.2f}{score_unit}`` (``score_key`` on the
    progress bar). A training loss that is not finite stops training with a ConfigError.
    ``last_path`` (or None): the resumable training state, read if it exists and written after
    every epoch; ``run_key``: a JSON-like dict that must match the saved one."""
    from tqdm import tqdm

    rng = random.Random(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    best = Validation(-1.0, math.inf)
    best_epoch, best_state, bad, stopped, elapsed, start = 0, None, 0, False, 0.0, 1
    run_key = json.loads(json.dumps(dict(run_key or {}, seed=seed, lr=lr), default=str))  # as stored
    if last_path is not None and Path(last_path).is_file():
        state = _load_last(Path(last_path), run_key)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        rng.setstate(_as_random_state(state["rng"]))
        torch.set_rng_state(state["torch_rng"])
        best = Validation(*state["best"])
        best_epoch, best_state, bad, elapsed = state["best_epoch"], state["best_state"], state["bad"], state["elapsed"]
        stopped = state["stopped"] and bad >= patience
        start = state["epoch"] + 1
        print(f"resuming from {last_path}: {state['epoch']} epochs done, best epoch {best_epoch} "
              f"({score_name} {100 * best.score:.2f}{score_unit})" + (", stopped early" if stopped else ""),
              file=sys.stderr)
    epochs = range(start, max_epochs + 1) if not stopped else range(0)
    bar = tqdm(epochs, desc="epochs", unit="epoch", disable=not progress, file=sys.stderr,
               initial=start - 1, total=max_epochs)
    t0 = time.time() - elapsed
    epoch = start - 1
    for epoch in bar:
        tr_loss, tr_detail = train_epoch(optimizer, rng)
        if not math.isfinite(tr_loss):
            raise ConfigError(f"training loss is {tr_loss} at epoch {epoch}; lower --lr")
        va = validate()
        bar.set_postfix(train_loss=f"{tr_loss:.3f}", valid_loss=f"{va.loss:.3f}", **{score_key: f"{100 * va.score:.2f}"})
        tqdm.write(f"epoch {epoch}: train loss {tr_loss:.4g}{tr_detail} | valid loss {va.loss:.4g} | "
                   f"{score_name} {100 * va.score:.2f}{score_unit}{va.detail} | {time.time() - t0:.0f}s", file=sys.stderr)
        if (va.score, -va.loss) > (best.score, -best.loss):  # ties: the lower valid loss
            best, best_epoch, bad = va, epoch, 0
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            if save_best is not None:
                save_best(epoch, va.score)
        else:
            bad += 1
        stopped = bad >= patience
        if last_path is not None:
            state = {"format": LAST_FORMAT, "run": run_key, "epoch": epoch, "stopped": stopped, "bad": bad,
                     "model": {k: v.detach().cpu() for k, v in model.state_dict().items()},
                     "optimizer": optimizer.state_dict(), "rng": list(_flatten_random_state(rng.getstate())),
                     "torch_rng": torch.get_rng_state(), "best": [best.score, best.loss, best.detail],
                     "best_epoch": best_epoch, "elapsed": time.time() - t0,
                     "best_state": {k: v.detach().cpu() for k, v in best_state.items()}}
            Path(last_path).parent.mkdir(parents=True, exist_ok=True)
            atomic_write(last_path, lambda f: torch.save(state, f))  # tmp file, fsync, rename
        if stopped:
            break
    bar.close()
    model.load_state_dict(best_state)
    print(f"best epoch {best_epoch} ({score_name} {100 * best.score:.2f}{score_unit}), {epoch} epochs in "
          f"{time.time() - t0:.0f}s", file=sys.stderr)
    return model, best_epoch, best.score


def _flatten_random_state(state):
    """``random.Random.getstate()`` as a flat list of ints and None (what ``weights_only`` loading reads)."""
    version, internal, gauss = state
    return [version, gauss, *internal]


def _as_random_state(flat):
    version, gauss, *internal = flat
    return version, tuple(internal), gauss


def percent(x) -> str:
    """A fraction as a percentage with two decimals; ``-`` for None."""
    return "-" if x is None else f"{100 * x:.2f}"


def results_markdown(title: str, columns, rows) -> str:
    """``### title`` and a Markdown table of ``columns`` (names; the first left-aligned, the others
    right-aligned) with one line per row of ``rows`` (cell strings)."""
    lines = [f"### {title}", "", "| " + " | ".join(columns) + " |", "|---|" + "---:|" * (len(columns) - 1)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
