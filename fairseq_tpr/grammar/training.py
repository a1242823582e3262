"""The training loop that ATPL's POS tagger (:mod:`.pos_tagger`) and constituency parser
(:mod:`.parser`) share: Adam with gradient clipping, one validation per epoch, early stopping.

:func:`train_early_stopping` keeps the epoch with the best validation score (token accuracy for
the tagger, EVALB F1 for the parser); an equal score with a lower validation loss counts as
better. It stops after ``patience`` epochs without a better one, saves the best epoch through
the caller's ``save_best`` (``checkpoint_best.pt``, written atomically by the caller's
``save_checkpoint``), and gives back the model with the best epoch's weights. Progress goes to
stderr: a tqdm bar over the epochs and one line per epoch.
"""
import math
import random
import sys
import time
from dataclasses import dataclass
from typing import Callable, Optional, Tuple

import torch

from ..errors import ConfigError


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


def train_early_stopping(model, train_epoch: Callable[[torch.optim.Optimizer, random.Random], Tuple[float, str]],
                         validate: Callable[[], Validation], save_best: Optional[Callable[[int, float], None]], *,
                         seed: int, max_epochs: int, patience: int, lr: float, progress: bool,
                         score_name: str, score_key: str, score_unit: str = ""):
    """Train ``model`` with early stopping (module docstring); returns ``(model with the best
    epoch's weights, best epoch, its validation score)``.

    ``train_epoch(optimizer, rng)`` runs one pass over the training data (shuffled with ``rng``,
    seeded with ``seed``) and returns ``(mean loss, detail for the epoch line)``; ``validate()``
    returns a :class:`Validation`; ``save_best(epoch, score)`` (or None) saves a new best epoch.
    The score is shown as ``{score_name} {100 * score:.2f}{score_unit}`` (``score_key`` on the
    progress bar). A training loss that is not finite stops training with a ConfigError."""
    from tqdm import tqdm

    rng = random.Random(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    best = Validation(-1.0, math.inf)
    best_epoch, best_state, bad = 0, None, 0
    bar = tqdm(range(1, max_epochs + 1), desc="epochs", unit="epoch", disable=not progress, file=sys.stderr)
    t0 = time.time()
    epoch = 0
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
            if bad >= patience:
                break
    bar.close()
    model.load_state_dict(best_state)
    print(f"best epoch {best_epoch} ({score_name} {100 * best.score:.2f}{score_unit}), {epoch} epochs in "
          f"{time.time() - t0:.0f}s", file=sys.stderr)
    return model, best_epoch, best.score
