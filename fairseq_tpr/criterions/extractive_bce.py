"""Criterion ``extractive_bce``: binary cross-entropy of the per-unit logits against the oracle labels
(Xiao, Huber & Carenini: "MLP Decoder to get the importance score of each unit", trained with BCE),

    loss = - sum_{units i} [ w_+ y_i log sigmoid(s_i) + (1 - y_i) log(1 - sigmoid(s_i)) ]

with ``w_+ = --pos-weight``: ``auto`` (the default, the authors' setting) is negatives /
positives over the units of the training split (``DATA/train.labels.npy``), read once at the first
batch and logged; a number sets it (1 = plain BCE). Padded units are left out. ``sample_size`` is
the number of units, so the logged ``loss`` is the mean BCE per unit in nats (not bits).
"""
import logging
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from fairseq import metrics
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass

from ..errors import ConfigError, InputError

logger = logging.getLogger(__name__)


@dataclass
class ExtractiveBCEConfig(FairseqDataclass):
    pos_weight: str = field(default="auto", metadata={
        "help": "weight of the positive (in-summary) units: a number > 0, or auto (negatives / positives over "
                "the training units, the authors' setting)"})


def parse_pos_weight(value):
    """``"auto"`` or a float > 0 (``--pos-weight``); a ConfigError otherwise."""
    if str(value) == "auto":
        return "auto"
    try:
        w = float(value)
    except ValueError:
        w = float("nan")
    if not w > 0:
        raise ConfigError(f"--pos-weight {value!r}: give auto or a number > 0")
    return w


@register_criterion("extractive_bce", dataclass=ExtractiveBCEConfig)
class ExtractiveBCECriterion(FairseqCriterion):
    def __init__(self, task, pos_weight="auto"):
        super().__init__(task)
        self.pos_weight = parse_pos_weight(pos_weight)

    def resolved_pos_weight(self):
        """The number ``--pos-weight`` stands for (``auto``: from the training labels, once)."""
        if self.pos_weight == "auto":
            negatives, positives = self.task.label_counts("train")
            if positives == 0:
                raise InputError(f"{self.task.cfg.data}/train.labels.npy has no positive unit: --pos-weight auto "
                                 "(negatives / positives) is undefined; check the oracle, or pass --pos-weight 1")
            self.pos_weight = negatives / positives
            logger.info(f"--pos-weight auto: {self.pos_weight:.4g} ({negatives} negative / {positives} positive "
                        f"training units)")
        return self.pos_weight

    def forward(self, model, sample, reduce=True):
        logits, extra = model(**sample["net_input"])  # B x T
        mask = sample["net_input"]["unit_mask"]
        y = sample["target"].to(logits.dtype)
        pw = torch.tensor(self.resolved_pos_weight(), dtype=torch.float32, device=logits.device)
        per_unit = F.binary_cross_entropy_with_logits(logits.float(), y.float(), pos_weight=pw, reduction="none")
        loss = (per_unit * mask).sum()
        n = int(mask.sum())
        with torch.no_grad():
            correct = (((logits > 0).float() == y) & mask).sum()
        logging_output = {"loss": loss.data, "ntokens": n, "nsentences": sample["nsentences"], "sample_size": n,
                          "correct": correct.data}
        return loss, n, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs):
        loss = sum(log.get("loss", 0) for log in logging_outputs)
        n = sum(log.get("sample_size", 0) for log in logging_outputs)
        correct = sum(log.get("correct", 0) for log in logging_outputs)
        metrics.log_scalar("loss", loss / max(n, 1), n, round=4)
        metrics.log_scalar("unit_acc", 100.0 * correct / max(n, 1), n, round=2)

    @staticmethod
    def logging_outputs_can_be_summed():
        return True
