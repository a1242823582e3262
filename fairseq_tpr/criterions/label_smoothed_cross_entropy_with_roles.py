"""Label-smoothed cross-entropy that also logs how one-hot the role attention is.

``role_onehot`` (Jiang et al. 2021, Sec. 5): the fraction of role attention
distributions (one per token, head and binding, padding excluded) whose maximum exceeds
``--role-onehot-threshold`` (0.98 in the paper, which reports more than 90%). It reads
``extra["role_attn"]`` returned by models with discrete roles and logs nothing for
other models, so it can be used with any ``--arch``. ``role_onehot_encoder`` and
``role_onehot_decoder`` are the same rate over the encoder's and the decoder's bindings: in
summarization the sources have many more tokens than the summaries, so the pooled
``role_onehot`` is mostly the encoder's.

``--label-smoothing-over`` says where the smoothing mass eps goes, per target token with gold
class y, V classes and ``p`` the model's distribution:

    other-classes (default, fairseq 0.12):  loss = -(1 - eps) log p_y - eps/(V-1) sum_{v != y} log p_v
    all-classes (fairseq 0.8.0, which the STTR authors' code patches; Szegedy et al. 2016):
                                            loss = -(1 - eps) log p_y - eps/V sum_v log p_v

Per token, other-classes minus all-classes is ``eps/(V-1) * (mean_v(-log p_v) - (-log p_y))``;
``nll_loss`` is the same.
"""
import functools
import operator
from dataclasses import dataclass, field
from typing import Dict, Tuple

import torch
from fairseq.criterions import register_criterion
from fairseq.criterions.label_smoothed_cross_entropy import (
    LabelSmoothedCrossEntropyCriterion,
    LabelSmoothedCrossEntropyCriterionConfig,
)
from fairseq.dataclass import ChoiceEnum
from fairseq.logging import metrics
from torch import Tensor

from ..errors import ConfigError

SMOOTHING_OVER = ("other-classes", "all-classes")


@dataclass
class LabelSmoothedCrossEntropyWithRolesConfig(LabelSmoothedCrossEntropyCriterionConfig):
    role_onehot_threshold: float = field(
        default=0.98, metadata={"help": "a role distribution counts as one-hot when its maximum exceeds this"}
    )
    label_smoothing_over: ChoiceEnum(SMOOTHING_OVER) = field(
        default="other-classes",
        metadata={"help": "where the smoothing mass goes: other-classes (fairseq 0.12: eps/(V-1) to each class but "
                          "the gold one) or all-classes (fairseq 0.8.0, the STTR authors' code: eps/V to every class)"},
    )


def label_smoothed_nll_loss_all_classes(lprobs: Tensor, target: Tensor, epsilon: float, ignore_index=None,
                                        reduce: bool = True) -> Tuple[Tensor, Tensor]:
    """fairseq 0.8.0's label smoothing (eps/V to every class, the gold one included):
    ``loss = (1 - eps) nll + eps/V * sum_v -log p_v``. lprobs: ``N x V``; target: ``N``.
    Returns (loss, nll_loss), summed with ``reduce``, else ``N x 1`` (pads 0), as fairseq 0.12's
    ``label_smoothed_nll_loss``."""
    target = target.unsqueeze(-1) if target.dim() == lprobs.dim() - 1 else target
    nll_loss = -lprobs.gather(dim=-1, index=target)
    smooth_loss = -lprobs.sum(dim=-1, keepdim=True)
    if ignore_index is not None:
        pad_mask = target.eq(ignore_index)
        nll_loss = nll_loss.masked_fill(pad_mask, 0.0)
        smooth_loss = smooth_loss.masked_fill(pad_mask, 0.0)
    else:
        nll_loss, smooth_loss = nll_loss.squeeze(-1), smooth_loss.squeeze(-1)
    if reduce:
        nll_loss, smooth_loss = nll_loss.sum(), smooth_loss.sum()
    loss = (1.0 - epsilon) * nll_loss + epsilon / lprobs.size(-1) * smooth_loss
    return loss, nll_loss


SIDES = ("encoder", "decoder")


def role_onehot_counts_by_side(role_attn, src_mask, tgt_mask, threshold: float) -> Dict[str, Tuple[Tensor, Tensor]]:
    """side -> (number of distributions with max > threshold, number of distributions), each a 0-dim
    tensor on the distributions' device (never read on the host here: no synchronisation in a step),
    for each side that has bindings.

    role_attn: name -> ``T x B x H x N_r``; names under ``encoder.`` are the encoder's and are
    masked with ``src_mask`` (``B x S``, True = real token), the others are the decoder's and are
    masked with ``tgt_mask`` (``B x T``)."""
    by_side = {}
    for name, attn in role_attn.items():
        by_side.setdefault("encoder" if name.startswith("encoder.") else "decoder", []).append(attn)
    counts = {}
    for side, attns in by_side.items():
        mask = (src_mask if side == "encoder" else tgt_mask).t().unsqueeze(-1)  # T x B x 1
        if all(a.shape == attns[0].shape for a in attns):  # one op each for all the side's bindings
            peaked = torch.stack(attns).amax(dim=-1) > threshold  # bindings x T x B x H
            counts[side] = (peaked & mask).sum(), mask.sum() * (peaked.size(0) * peaked.size(-1))
        else:
            peaked = [a.amax(dim=-1) > threshold for a in attns]  # T x B x H each
            counts[side] = (sum((p & mask).sum() for p in peaked), mask.sum() * sum(p.size(-1) for p in peaked))
    return {side: counts[side] for side in SIDES if side in counts}


def pooled(counts: Dict[str, Tuple[Tensor, Tensor]]) -> Tuple[Tensor, Tensor]:
    """A :func:`role_onehot_counts_by_side` result summed over the sides."""
    return sum(n for n, _ in counts.values()), sum(total for _, total in counts.values())


def role_onehot_counts(role_attn, src_mask, tgt_mask, threshold: float) -> Tuple[Tensor, Tensor]:
    """:func:`role_onehot_counts_by_side` over both sides."""
    return pooled(role_onehot_counts_by_side(role_attn, src_mask, tgt_mask, threshold))


def add_counts(a: Dict[str, Tuple[Tensor, Tensor]], b: Dict[str, Tuple[Tensor, Tensor]]) -> Dict[str, Tuple[Tensor, Tensor]]:
    """The side-wise sum of two :func:`role_onehot_counts_by_side` results (a side either has)."""
    return {side: (a[side][0] + b[side][0], a[side][1] + b[side][1]) if side in a and side in b else
            a.get(side, b.get(side)) for side in SIDES if side in a or side in b}


def log_role_onehot(logging_outputs, suffixes=("",)) -> None:
    """Log ``role_onehot{suffix}`` = summed ``role_onehot_n{suffix}`` / summed ``role_dists{suffix}`` over
    the logging window, for every suffix some logging output has. The counts stay tensors: they are
    summed into hidden meters (``_role_onehot_n``, ``_role_dists``) and divided only when the value is
    printed (fairseq's ``log_derived``), so a training step never waits for the device to read them."""
    for suffix in suffixes:
        if not any(f"role_dists{suffix}" in log for log in logging_outputs):
            continue
        n_key, total_key = f"_role_onehot_n{suffix}", f"_role_dists{suffix}"
        metrics.log_scalar_sum(n_key, _total(log[f"role_onehot_n{suffix}"] for log in logging_outputs
                                             if f"role_onehot_n{suffix}" in log))
        metrics.log_scalar_sum(total_key, _total(log[f"role_dists{suffix}"] for log in logging_outputs
                                                 if f"role_dists{suffix}" in log))
        metrics.log_derived(f"role_onehot{suffix}", functools.partial(_share, n_key, total_key))


def _total(values):
    """The sum of the counts, without ``sum``'s ``0 +`` (one op less per count on every update)."""
    values = list(values)
    return functools.reduce(operator.add, values) if values else 0


def _share(n_key: str, total_key: str, meters) -> Tensor:
    """``n / total`` of two summed meters, rounded to 4 places as fairseq rounds its logged values, as a
    float64 tensor: fairseq's trainer evaluates every meter after each step, and reading it here would
    wait for the device; fairseq's log prints it as a number."""
    n, total = meters[n_key].sum, meters[total_key].sum
    return torch.round(n.double() / total.double(), decimals=4)


@register_criterion("label_smoothed_cross_entropy_with_roles", dataclass=LabelSmoothedCrossEntropyWithRolesConfig)
class LabelSmoothedCrossEntropyWithRolesCriterion(LabelSmoothedCrossEntropyCriterion):
    def __init__(self, task, sentence_avg, label_smoothing, ignore_prefix_size=0, report_accuracy=False,
                 role_onehot_threshold=0.98, label_smoothing_over="other-classes"):
        super().__init__(task, sentence_avg, label_smoothing, ignore_prefix_size, report_accuracy)
        self.role_onehot_threshold = role_onehot_threshold
        if str(label_smoothing_over) not in SMOOTHING_OVER:
            raise ConfigError(f"--label-smoothing-over must be one of {', '.join(SMOOTHING_OVER)} "
                              f"(got {label_smoothing_over!r})")
        self.label_smoothing_over = str(label_smoothing_over)

    def compute_loss(self, model, net_output, sample, reduce=True):
        """fairseq's label-smoothed loss, or fairseq 0.8.0's with ``--label-smoothing-over all-classes``."""
        if self.label_smoothing_over == "other-classes":
            return super().compute_loss(model, net_output, sample, reduce=reduce)
        lprobs, target = self.get_lprobs_and_target(model, net_output, sample)
        return label_smoothed_nll_loss_all_classes(lprobs, target, self.eps, ignore_index=self.padding_idx,
                                                   reduce=reduce)

    def forward(self, model, sample, reduce=True):
        net_output = model(**sample["net_input"])
        loss, nll_loss = self.compute_loss(model, net_output, sample, reduce=reduce)
        nsentences = sample["target"].size(0)
        sample_size = nsentences if self.sentence_avg else sample["ntokens"]
        logging_output = {
            "nll_loss": nll_loss.data,
            "ntokens": sample["ntokens"],
            "nsentences": nsentences,
            "sample_size": sample_size,
        }
        loss = self.add_terms(loss, model, net_output, sample, sample_size, logging_output, reduce)
        logging_output["loss"] = loss.data
        if self.report_accuracy:
            n_correct, total = self.compute_accuracy(model, net_output, sample)
            logging_output["n_correct"] = n_correct.data
            logging_output["total"] = total.data
        role_attn = net_output[1].get("role_attn") if isinstance(net_output[1], dict) else None
        if role_attn:
            with torch.no_grad():
                counts = self.role_counts(role_attn, sample)
            logging_output["role_onehot_n"], logging_output["role_dists"] = pooled(counts)
            for side, (n, total) in counts.items():
                logging_output[f"role_onehot_n_{side}"], logging_output[f"role_dists_{side}"] = n, total
        return loss, sample_size, logging_output

    def add_terms(self, loss, model, net_output, sample, sample_size, logging_output, reduce):
        """Loss terms beyond label-smoothed cross-entropy, for subclasses: returns ``loss`` plus
        them, each logged in ``logging_output`` under its own name. None here."""
        return loss

    def role_counts(self, role_attn, sample) -> Dict[str, Tuple[int, int]]:
        """side -> (distributions with max > ``--role-onehot-threshold``, distributions), padding
        excluded: encoder bindings are masked with the source, the others with the target."""
        return role_onehot_counts_by_side(role_attn, sample["net_input"]["src_tokens"].ne(self.padding_idx),
                                          sample["target"].ne(self.padding_idx), self.role_onehot_threshold)

    @classmethod
    def reduce_metrics(cls, logging_outputs) -> None:
        super().reduce_metrics(logging_outputs)
        log_role_onehot(logging_outputs, ("", "_encoder", "_decoder"))
