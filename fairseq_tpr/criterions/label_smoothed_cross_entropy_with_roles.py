"""Label-smoothed cross-entropy that also logs how one-hot the role attention is.

``role_onehot`` (Jiang et al. 2021, Sec. 5): the fraction of role attention
distributions (one per token, head and binding, padding excluded) whose maximum exceeds
``--role-onehot-threshold`` (0.98 in the paper, which reports more than 90%). It reads
``extra["role_attn"]`` returned by models with discrete roles and logs nothing for
other models, so it can be used with any ``--arch``.
"""
from dataclasses import dataclass, field

import torch
from fairseq.criterions import register_criterion
from fairseq.criterions.label_smoothed_cross_entropy import (
    LabelSmoothedCrossEntropyCriterion,
    LabelSmoothedCrossEntropyCriterionConfig,
)
from fairseq.logging import metrics


@dataclass
class LabelSmoothedCrossEntropyWithRolesConfig(LabelSmoothedCrossEntropyCriterionConfig):
    role_onehot_threshold: float = field(
        default=0.98, metadata={"help": "a role distribution counts as one-hot when its maximum exceeds this"}
    )


def role_onehot_counts(role_attn, src_mask, tgt_mask, threshold: float):
    """(number of distributions with max > threshold, number of distributions).

    role_attn: name -> ``T x B x H x N_r``; names under ``encoder.`` are masked with
    ``src_mask`` (``B x S``, True = real token), the others with ``tgt_mask`` (``B x T``)."""
    onehot = total = 0
    for name, attn in role_attn.items():
        mask = (src_mask if name.startswith("encoder.") else tgt_mask).t().unsqueeze(-1)  # T x B x 1
        peaked = attn.max(dim=-1).values > threshold  # T x B x H
        onehot += (peaked & mask).sum().item()
        total += mask.sum().item() * attn.size(2)
    return onehot, total


@register_criterion("label_smoothed_cross_entropy_with_roles", dataclass=LabelSmoothedCrossEntropyWithRolesConfig)
class LabelSmoothedCrossEntropyWithRolesCriterion(LabelSmoothedCrossEntropyCriterion):
    def __init__(self, task, sentence_avg, label_smoothing, ignore_prefix_size=0, report_accuracy=False,
                 role_onehot_threshold=0.98):
        super().__init__(task, sentence_avg, label_smoothing, ignore_prefix_size, report_accuracy)
        self.role_onehot_threshold = role_onehot_threshold

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
                logging_output["role_onehot_n"], logging_output["role_dists"] = self.role_counts(role_attn, sample)
        return loss, sample_size, logging_output

    def add_terms(self, loss, model, net_output, sample, sample_size, logging_output, reduce):
        """Loss terms beyond label-smoothed cross-entropy, for subclasses: returns ``loss`` plus
        them, each logged in ``logging_output`` under its own name. None here."""
        return loss

    def role_counts(self, role_attn, sample):
        """(distributions with max > ``--role-onehot-threshold``, distributions), padding
        excluded: encoder bindings are masked with the source, the others with the target."""
        return role_onehot_counts(role_attn, sample["net_input"]["src_tokens"].ne(self.padding_idx),
                                  sample["target"].ne(self.padding_idx), self.role_onehot_threshold)

    @classmethod
    def reduce_metrics(cls, logging_outputs) -> None:
        super().reduce_metrics(logging_outputs)
        total = sum(log.get("role_dists", 0) for log in logging_outputs)
        if total > 0:
            onehot = sum(log.get("role_onehot_n", 0) for log in logging_outputs)
            metrics.log_scalar("role_onehot", onehot / total, total, round=4)
