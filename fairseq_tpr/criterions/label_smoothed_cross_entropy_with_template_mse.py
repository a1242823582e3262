"""STTR's training loss (Sun, Wang, Li, Eq. 23-25): label-smoothed cross-entropy plus
``lambda`` times the document representation shifting loss

    L_mse = || mean(H_ts) - mean(E_t) ||^2                              (Eq. 23)

with ``H_ts`` the template-aware document (Eq. 20; ``extra["template_aware"]`` of
``--arch sttr*`` with ``--template-mode attention``) and ``E_t`` the decoder's token embeddings
of the target (:meth:`STTRModel.target_embeddings`); both means are over non-pad positions
(the reference code divides by the padded length, so an example's loss depends on the longest
example in its batch: a bug we do not copy).

Scaling: ``L_mse`` is one number per sentence; fairseq divides the summed loss by the
sample size (target tokens, or sentences with ``--sentence-avg``) before the gradient step, so
the criterion adds ``lambda * sum_b L_mse(b) * sample_size / nsentences``: the optimised
quantity is ``CE per token + lambda * mean over sentences of L_mse``, independent of batch
size. The paper's Eq. 25 is ``lambda = 1`` (``--template-mse-lambda 1``, the default);
``--template-mse-lambda 0`` is Table III's "+Attention" without the loss and gives exactly the
plain label-smoothed cross-entropy. Gradients of ``L_mse`` reach ``H_ts`` and the (shared)
embeddings ``E_t``; nothing is detached.

Logged: ``loss`` (the total, base 2 like fairseq's), ``nll_loss``, ``template_mse`` (mean
``L_mse`` per sentence) and ``template_sim`` (Table IV / Eq. 26: the cosine between the two
means, mapped from [-1, 1] to [0, 1], mean per sentence: :func:`representation_similarity`, which
``fairseq-tpr-template-similarity`` reuses to report it over a split); with ``--tpr discrete`` also
``role_onehot`` (as ``label_smoothed_cross_entropy_with_roles``).
"""
from dataclasses import dataclass, field
from typing import Optional

import torch
import torch.nn.functional as F
from fairseq.criterions import register_criterion
from fairseq.logging import metrics
from torch import Tensor

from ..modules.precision import at_least_fp32
from ..modules.template_fusion import masked_mean, shifting_loss
from .label_smoothed_cross_entropy_with_roles import (
    LabelSmoothedCrossEntropyWithRolesConfig,
    LabelSmoothedCrossEntropyWithRolesCriterion,
    role_onehot_counts,
)


def representation_similarity(h: Tensor, source_padding_mask: Optional[Tensor], e_t: Tensor,
                              target_padding_mask: Optional[Tensor]) -> Tensor:
    """Table IV / Eq. 26 per sentence (``B``, no gradient): ``(cosine(mean(h), mean(E_t)) + 1) / 2``,
    the cosine mapped from [-1, 1] to [0, 1], both means over non-pad positions (``masked_mean``).

    h: ``S x B x C`` (``H_ts`` in the paper; ``fairseq-tpr-template-similarity`` also passes the
    source encoder output ``H_s``); e_t: ``T x B x C`` (:meth:`STTRModel.target_embeddings`);
    masks ``B x S`` / ``B x T`` (True = pad). Computed in fp32."""
    with torch.no_grad():
        cos = F.cosine_similarity(masked_mean(at_least_fp32(h), source_padding_mask),
                                  masked_mean(at_least_fp32(e_t), target_padding_mask), dim=-1)
    return (cos + 1) / 2


@dataclass
class LabelSmoothedCrossEntropyWithTemplateMSEConfig(LabelSmoothedCrossEntropyWithRolesConfig):
    template_mse_lambda: float = field(
        default=1.0, metadata={"help": "weight of STTR's shifting loss (Eq. 23); 0 = cross-entropy only"}
    )


@register_criterion("label_smoothed_cross_entropy_with_template_mse",
                    dataclass=LabelSmoothedCrossEntropyWithTemplateMSEConfig)
class LabelSmoothedCrossEntropyWithTemplateMSECriterion(LabelSmoothedCrossEntropyWithRolesCriterion):
    """``label_smoothed_cross_entropy_with_roles`` plus the shifting loss (module docstring)."""

    def __init__(self, task, sentence_avg, label_smoothing, ignore_prefix_size=0, report_accuracy=False,
                 template_mse_lambda=1.0, role_onehot_threshold=0.98):
        super().__init__(task, sentence_avg, label_smoothing, ignore_prefix_size, report_accuracy,
                         role_onehot_threshold=role_onehot_threshold)
        if template_mse_lambda < 0:
            raise ValueError(f"--template-mse-lambda must be >= 0 (got {template_mse_lambda})")
        self.template_mse_lambda = template_mse_lambda

    def add_terms(self, loss, model, net_output, sample, sample_size, logging_output, reduce):
        """``loss + lambda * sum_b L_mse(b) * sample_size / nsentences`` (module docstring); logs
        ``template_mse``, ``template_sim`` and ``template_n``."""
        terms = self.shifting_terms(model, net_output, sample)
        if terms is None:
            return loss
        mse, sim = terms  # B, B
        nsentences = sample["target"].size(0)
        if self.template_mse_lambda != 0:
            weight = self.template_mse_lambda * sample_size / nsentences
            loss = loss + weight * (mse.sum() if reduce else mse)
        logging_output["template_mse"] = mse.sum().data
        logging_output["template_sim"] = sim.sum().data
        logging_output["template_n"] = nsentences
        return loss

    def shifting_terms(self, model, net_output, sample):
        """(``L_mse`` per sentence, Eq. 23; similarity per sentence, Eq. 26 mapped to [0, 1]), or None
        when the model has no template-aware document (``--template-mode none/concat``) and lambda is 0."""
        extra = net_output[1] if isinstance(net_output[1], dict) else {}
        h_ts = extra.get("template_aware") or []
        if not h_ts:
            if self.template_mse_lambda != 0:
                raise ValueError(
                    "--template-mse-lambda is not 0 but the model returns no template-aware document (H_ts): the "
                    "shifting loss needs --arch sttr* with --template-mode attention. For --template-mode none or "
                    "concat pass --template-mse-lambda 0."
                )
            return None
        h_ts, source_mask = h_ts[0], extra["template_aware_padding_mask"][0]  # S x B x C, B x S
        target = sample["target"]
        e_t = model.target_embeddings(target)  # T x B x C
        target_mask = target.eq(self.padding_idx)  # B x T
        mse = shifting_loss(h_ts, source_mask, e_t, target_mask)
        return mse, representation_similarity(h_ts, source_mask, e_t, target_mask)

    def role_counts(self, role_attn, sample):
        """As the roles criterion, but template-encoder bindings are masked with the template."""
        template = {k: v for k, v in role_attn.items() if k.startswith("encoder.template_encoder.")}
        rest = {k: v for k, v in role_attn.items() if k not in template}
        n, total = super().role_counts(rest, sample)
        if template:
            n2, t2 = role_onehot_counts(template, sample["net_input"]["template_tokens"].ne(self.padding_idx),
                                        sample["target"].ne(self.padding_idx), self.role_onehot_threshold)
            n, total = n + n2, total + t2
        return n, total

    @classmethod
    def reduce_metrics(cls, logging_outputs) -> None:
        super().reduce_metrics(logging_outputs)  # loss, nll_loss, ppl, role_onehot
        n = sum(log.get("template_n", 0) for log in logging_outputs)
        if n > 0:
            mse = sum(float(log.get("template_mse", 0)) for log in logging_outputs)
            sim = sum(float(log.get("template_sim", 0)) for log in logging_outputs)
            metrics.log_scalar("template_mse", mse / n, n, round=4)
            metrics.log_scalar("template_sim", sim / n, n, round=4)
