"""Criterion ``extractive_bce``: binary cross-entropy of the per-unit logits against the oracle labels
(Xiao, Huber & Carenini: "MLP Decoder to get the importance score of each unit", trained with BCE),

    loss = - sum_{units i} [ w_+ y_i log sigmoid(s_i) + (1 - y_i) log(1 - sigmoid(s_i)) ]

with ``w_+ = --pos-weight`` (1 = plain BCE; > 1 counters the few positive units, about 3 of 27
sentences or 6 of 70 EDUs on CNN/DM). Padded units are left out. ``sample_size`` is the number of
units, so the logged ``loss`` is the mean BCE per unit in nats (not bits).
"""
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from fairseq import metrics
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass


@dataclass
class ExtractiveBCEConfig(FairseqDataclass):
    pos_weight: float = field(default=1.0, metadata={"help": "weight of the positive (in-summary) units"})


@register_criterion("extractive_bce", dataclass=ExtractiveBCEConfig)
class ExtractiveBCECriterion(FairseqCriterion):
    def __init__(self, task, pos_weight=1.0):
        super().__init__(task)
        self.pos_weight = pos_weight

    def forward(self, model, sample, reduce=True):
        logits, extra = model(**sample["net_input"])  # B x T
        mask = sample["net_input"]["unit_mask"]
        y = sample["target"].to(logits.dtype)
        pw = torch.tensor(self.pos_weight, dtype=torch.float32, device=logits.device)
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
