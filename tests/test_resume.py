"""A run stopped and resumed from ``checkpoint_last.pt`` reproduces the uninterrupted run.

Each case trains ``TOTAL`` updates straight, and ``CUT`` updates then ``TOTAL`` resumed from the
first run's ``checkpoint_last.pt``, in this process (``fairseq_cli.train.main`` on a parsed
config, as ``fairseq-train`` runs it). An epoch is ``UPDATES_PER_EPOCH`` updates, so the resume
falls inside epoch 2, where fairseq 0.12.3 used to build other batches than the straight run
(see ``fairseq_fixes.fix_resume_epoch_iterator``). A wrapper of ``Trainer.train_step`` records,
per update, the loss it returns (fairseq's 3-decimal rounding, ``meters.safe_round``, switched
off), the sentence ids of the batch and the RNG states after the update.
"""
import hashlib
import random
import shutil

import numpy as np
import pytest
import torch
from fairseq.logging import meters
from fairseq.trainer import Trainer

from _inprocess import binarize_reversal, train_argv
from _inprocess import train as train_in_process

N_TRAIN, MAX_TOKENS, UPDATES_PER_EPOCH = 200, 200, 8  # reversal lines of 3-10 letters
TOTAL, CUT = 20, 10
TOL = 1e-4
CASES = {  # name: (arch, criterion, dropout)
    "tp_transformer_d_tiny-dropout": ("tp_transformer_d_tiny", "label_smoothed_cross_entropy_with_roles", 0.1),
    "transformer-dropout": ("transformer_tp_tiny", "label_smoothed_cross_entropy", 0.1),
    "transformer-no-dropout": ("transformer_tp_tiny", "label_smoothed_cross_entropy", 0.0),
}


@pytest.fixture(scope="module")
def data_bin(tmp_path_factory):
    return binarize_reversal(tmp_path_factory.mktemp("resume"), N_TRAIN)


def _digest(state):
    data = state.numpy().tobytes() if torch.is_tensor(state) else repr(state).encode()
    return hashlib.sha1(data).hexdigest()


def train(data, save_dir, case, max_update, get_train_iterator=None):
    """``fairseq-train`` in this process; returns ``{num_updates: record}`` of this run: the loss
    ``Trainer.train_step`` returns (unrounded), the sentence ids of the batch and the RNG states
    after the update."""
    arch, criterion, dropout = CASES[case]
    argv = train_argv(data, save_dir, arch, criterion, max_update, "--dropout", dropout,
                      "--lr-scheduler", "inverse_sqrt", "--warmup-updates", 5, "--max-tokens", MAX_TOKENS)
    record = {}
    train_step = Trainer.train_step

    def recording_train_step(self, samples, raise_oom=False):
        out = train_step(self, samples, raise_oom)
        record[self.get_num_updates()] = {
            "loss": float(out["loss"]),
            "ids": [s["id"].tolist() for s in samples if s],
            "torch_rng": _digest(torch.get_rng_state()),
            "numpy_rng": _digest(np.random.get_state()),
            "python_rng": _digest(random.getstate()),
        }
        return out

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(meters, "safe_round", lambda number, ndigits: number)  # no 3-decimal rounding
        monkeypatch.setattr(Trainer, "train_step", recording_train_step)
        if get_train_iterator is not None:
            monkeypatch.setattr(Trainer, "get_train_iterator", get_train_iterator)
        train_in_process(argv)
    return record


class Runs:
    """Straight and resumed runs of each case, trained on first use and kept for the module."""

    def __init__(self, data, root):
        self.data, self.root, self._done = data, root, {}

    def __call__(self, case):
        if case not in self._done:
            d = self.root / case
            straight = train(self.data, d / "straight", case, TOTAL)
            first = train(self.data, d / "resumed", case, CUT)
            shutil.copytree(d / "resumed", d / "at_cut")  # checkpoint_last.pt at update CUT
            second = train(self.data, d / "resumed", case, TOTAL)
            self._done[case] = straight, first, second
        return self._done[case]


@pytest.fixture(scope="module")
def runs(data_bin, tmp_path_factory):
    return Runs(data_bin, tmp_path_factory.mktemp("runs"))


def test_an_epoch_is_about_eight_updates_so_the_resume_is_inside_epoch_2(runs):
    straight, _, _ = runs("transformer-no-dropout")
    ids = [straight[u]["ids"] for u in range(1, TOTAL + 1)]
    seen = [i for batch in ids[:UPDATES_PER_EPOCH] for s in batch for i in s]
    assert sorted(seen) == list(range(N_TRAIN)), "epoch 1 should be exactly the first 8 updates"
    assert UPDATES_PER_EPOCH < CUT < 2 * UPDATES_PER_EPOCH


@pytest.mark.parametrize("case", CASES)
def test_resumed_run_reproduces_every_update_of_the_straight_run(case, runs):
    straight, first, second = runs(case)
    assert sorted(straight) == list(range(1, TOTAL + 1))
    assert sorted(first) == list(range(1, CUT + 1)) and sorted(second) == list(range(CUT + 1, TOTAL + 1))
    resumed = {**first, **second}
    for u in range(1, TOTAL + 1):
        assert resumed[u]["ids"] == straight[u]["ids"], f"update {u}: other sentences in the batch"
        assert abs(resumed[u]["loss"] - straight[u]["loss"]) <= TOL, (
            f"update {u}: loss {resumed[u]['loss']} resumed vs {straight[u]['loss']} straight")


@pytest.mark.parametrize("case", ["tp_transformer_d_tiny-dropout", "transformer-dropout"])
def test_rng_states_after_every_update_are_those_of_the_straight_run(case, runs):
    """Trainer.train_step reseeds torch with seed + num_updates before each update, so dropout
    masks do not depend on where the run started; numpy's global state is seeded once per
    process (the data code draws from it only inside ``numpy_seed`` blocks, which restore it) and
    Python's ``random`` is not used by training at all."""
    straight, first, second = runs(case)
    resumed = {**first, **second}
    for u in range(1, TOTAL + 1):
        for rng in ("torch_rng", "numpy_rng", "python_rng"):
            assert resumed[u][rng] == straight[u][rng], f"update {u}: {rng} differs after resume"
    assert len({straight[u]["torch_rng"] for u in straight}) == TOTAL  # a new dropout state each update
    assert len({straight[u]["python_rng"] for u in straight}) == 1  # never drawn from


def test_without_the_fix_the_resume_trains_on_other_batches(runs, tmp_path):
    """fairseq's own ``Trainer.get_train_iterator`` (the fix's ``fairseq_tpr_original``) rebuilds
    the epoch-2 batches with epoch 2's seed on resume: other batches, other losses."""
    case = "transformer-no-dropout"
    straight, _, _ = runs(case)
    shutil.copytree(runs.root / case / "at_cut", tmp_path / "ckpt")
    unpatched = Trainer.get_train_iterator.fairseq_tpr_original
    second = train(runs.data, tmp_path / "ckpt", case, TOTAL, get_train_iterator=unpatched)
    assert sorted(second) == list(range(CUT + 1, TOTAL + 1))
    other_batches = [u for u in second if second[u]["ids"] != straight[u]["ids"]]
    assert CUT + 1 in other_batches, "the first resumed update should already differ without the fix"
    assert max(abs(second[u]["loss"] - straight[u]["loss"]) for u in second) > 10 * TOL
