"""STTR's training loss (Sun, Wang, Li, Eq. 23-25) at the authors' scale: label-smoothed
cross-entropy summed over the batch's target tokens plus ``lambda`` times the mean squared
difference of two mean vectors,

    L = sum_tokens CE_ls + lambda * (1 / (B d)) * sum_b || mean(H_ts,b) - mean(E_t,b) ||^2

which is what the authors' code (SunJMMMM/STTR, ``criterions/label_smoothed_cross_entropy.py``)
computes: ``loss + torch.nn.MSELoss()(target_mean, tp_mean)``, the MSE averaged over the
``B x d`` elements of the two ``B x d`` mean vectors and added once per batch; fairseq then
divides the batch's loss by its sample size (target tokens, or sentences with ``--sentence-avg``)
before the update, so the shifting term weighs ``lambda / (tokens in the batch)`` per element
against the cross-entropy per token. ``--template-mse-lambda 1`` (the default; the authors'
code has no lambda) is their system; ``0`` is Table III's "+Attention" without the loss and
gives exactly fairseq's label-smoothed cross-entropy.

``H_ts`` is the template-aware document (Eq. 20; ``extra["template_aware"]`` of ``--arch sttr*``
with ``--template-mode attention``). ``E_t`` (``--template-mse-target``): ``decoder-input`` (the
default, the authors' code and the paper's Eq. 12 ``H_dl^0 = E_t``) is the decoder's input, the
scaled embeddings of ``prev_output_tokens`` plus positions after dropout, read from the decoder's
``extra["inner_states"][0]``; ``token-embeddings`` is ``sqrt(d) E[target]`` without positions
(:meth:`STTRModel.target_embeddings`). Both means are over non-pad positions (the authors' code
divides by the padded length, so an example's loss depends on the longest example in its batch:
a bug we do not copy). Gradients of the term reach ``H_ts`` and the (shared) embeddings; nothing
is detached.

With ``reduce=False`` the per-token losses get each sentence's share of the term,
``lambda * ||.||^2_b / (B d)``, spread evenly over that sentence's target tokens, so that the
per-token losses still sum to ``L``.

Logged: ``loss`` (the total, base 2 like fairseq's), ``nll_loss``, ``template_mse`` (the
shifting term's ``||.||^2 / d`` per sentence, averaged over sentences: the authors' MSE value
over the whole split; divided by ``template_n``, the sentences) and ``template_sim`` (Table IV /
Eq. 26: the cosine between the two means mapped from [-1, 1] to [0, 1], averaged over sentences:
:func:`representation_similarity`, which ``fairseq-tpr-template-similarity`` reuses over a
split); with ``--tpr discrete`` also ``role_onehot`` (as ``label_smoothed_cross_entropy_with_roles``).
"""
from dataclasses import dataclass, field
from typing import Optional, Tuple

import torch
import torch.nn.functional as F
from fairseq.criterions import register_criterion
from fairseq.dataclass import ChoiceEnum
from fairseq.logging import metrics
from torch import Tensor

from ..errors import ConfigError
from ..modules.precision import at_least_fp32
from ..modules.template_fusion import masked_mean, shifting_loss
from .label_smoothed_cross_entropy_with_roles import (
    LabelSmoothedCrossEntropyWithRolesConfig,
    LabelSmoothedCrossEntropyWithRolesCriterion,
    add_counts,
    role_onehot_counts_by_side,
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


SHIFT_TARGETS = ("decoder-input", "token-embeddings")


def shift_target(kind: str, model, extra, sample, padding_idx: int) -> Tuple[Tensor, Tensor]:
    """``E_t`` of Eq. 23 (``T x B x C``) and its padding mask (``B x T``, True = pad).

    kind ``decoder-input``: the decoder's input states as the decoder computed them in this
    forward pass (``extra["inner_states"][0]``: scaled embeddings of ``prev_output_tokens`` plus
    positions, after dropout), masked with ``prev_output_tokens``; ``token-embeddings``:
    :meth:`STTRModel.target_embeddings` of ``sample["target"]``, masked with the target."""
    if kind == "decoder-input":
        prev = sample["net_input"]["prev_output_tokens"]
        return extra["inner_states"][0], prev.eq(padding_idx)
    target = sample["target"]
    return model.target_embeddings(target), target.eq(padding_idx)


@dataclass
class LabelSmoothedCrossEntropyWithTemplateMSEConfig(LabelSmoothedCrossEntropyWithRolesConfig):
    template_mse_lambda: float = field(
        default=1.0, metadata={"help": "weight of STTR's shifting loss (Eq. 23) at the authors' scale: "
                                       "summed CE + lambda * MSE over B x d; 0 = cross-entropy only"}
    )
    template_mse_target: ChoiceEnum(SHIFT_TARGETS) = field(
        default="decoder-input",
        metadata={"help": "E_t of Eq. 23: decoder-input (embeddings of prev_output_tokens with positions and "
                          "dropout, as the authors' code) or token-embeddings (sqrt(d) E[target], no positions)"},
    )


@register_criterion("label_smoothed_cross_entropy_with_template_mse",
                    dataclass=LabelSmoothedCrossEntropyWithTemplateMSEConfig)
class LabelSmoothedCrossEntropyWithTemplateMSECriterion(LabelSmoothedCrossEntropyWithRolesCriterion):
    """``label_smoothed_cross_entropy_with_roles`` plus the shifting loss (module docstring)."""

    def __init__(self, task, sentence_avg, label_smoothing, ignore_prefix_size=0, report_accuracy=False,
                 template_mse_lambda=1.0, template_mse_target="decoder-input", role_onehot_threshold=0.98,
                 label_smoothing_over="other-classes"):
        super().__init__(task, sentence_avg, label_smoothing, ignore_prefix_size, report_accuracy,
                         role_onehot_threshold=role_onehot_threshold, label_smoothing_over=label_smoothing_over)
        if template_mse_lambda < 0:
            raise ConfigError(f"--template-mse-lambda must be >= 0 (got {template_mse_lambda})")
        if str(template_mse_target) not in SHIFT_TARGETS:
            raise ConfigError(f"--template-mse-target must be one of {', '.join(SHIFT_TARGETS)} "
                              f"(got {template_mse_target!r})")
        self.template_mse_lambda = template_mse_lambda
        self.template_mse_target = str(template_mse_target)

    def add_terms(self, loss, model, net_output, sample, sample_size, logging_output, reduce):
        """``loss + lambda * mean over B x d of the squared mean difference`` (module docstring);
        logs ``template_mse``, ``template_sim`` and ``template_n``."""
        terms = self.shifting_terms(model, net_output, sample)
        if terms is None:
            return loss
        mse, sim = terms  # B (||.||^2 / d per sentence), B
        nsentences = sample["target"].size(0)
        if self.template_mse_lambda != 0:
            share = self.template_mse_lambda * mse / nsentences  # B: each sentence's share of lambda * MSE
            loss = loss + (share.sum() if reduce else self.spread_over_tokens(share, loss, sample))
        logging_output["template_mse"] = mse.sum().data
        logging_output["template_sim"] = sim.sum().data
        logging_output["template_n"] = nsentences
        return loss

    def spread_over_tokens(self, share: Tensor, loss: Tensor, sample) -> Tensor:
        """``reduce=False``: ``share`` (``B``) spread evenly over each sentence's non-pad target
        tokens, in the shape of fairseq's unreduced loss (``B*T x 1``, pads 0)."""
        target = sample["target"][:, self.ignore_prefix_size:]  # B x T
        keep = target.ne(self.padding_idx).to(share.dtype)
        per_token = keep * (share / keep.sum(dim=1).clamp(min=1)).unsqueeze(1)  # B x T
        return per_token.reshape(loss.shape).to(loss.dtype)

    def shifting_terms(self, model, net_output, sample):
        """(``L_mse / d`` per sentence, Eq. 23 averaged over the ``d`` elements; similarity per
        sentence, Eq. 26 mapped to [0, 1]), or None when the model has no template-aware document
        (``--template-mode none/concat``) and lambda is 0."""
        extra = net_output[1] if isinstance(net_output[1], dict) else {}
        h_ts = extra.get("template_aware") or []
        if not h_ts:
            if self.template_mse_lambda != 0:
                raise ConfigError(
                    "--template-mse-lambda is not 0 but the model returns no template-aware document (H_ts): the "
                    "shifting loss needs --arch sttr* with --template-mode attention. For --template-mode none or "
                    "concat pass --template-mse-lambda 0."
                )
            return None
        h_ts, source_mask = h_ts[0], extra["template_aware_padding_mask"][0]  # S x B x C, B x S
        e_t, target_mask = shift_target(self.template_mse_target, model, extra, sample, self.padding_idx)
        mse = shifting_loss(h_ts, source_mask, e_t, target_mask) / h_ts.size(-1)
        return mse, representation_similarity(h_ts, source_mask, e_t, target_mask)

    def role_counts(self, role_attn, sample):
        """As the roles criterion, but template-encoder bindings are masked with the template."""
        template = {k: v for k, v in role_attn.items() if k.startswith("encoder.template_encoder.")}
        rest = {k: v for k, v in role_attn.items() if k not in template}
        counts = super().role_counts(rest, sample)
        if template:  # names under encoder.: counted as the encoder's
            counts = add_counts(counts, role_onehot_counts_by_side(
                template, sample["net_input"]["template_tokens"].ne(self.padding_idx),
                sample["target"].ne(self.padding_idx), self.role_onehot_threshold))
        return counts

    @classmethod
    def reduce_metrics(cls, logging_outputs) -> None:
        super().reduce_metrics(logging_outputs)  # loss, nll_loss, ppl, role_onehot
        n = sum(log.get("template_n", 0) for log in logging_outputs)
        if n > 0:
            mse = sum(float(log.get("template_mse", 0)) for log in logging_outputs)
            sim = sum(float(log.get("template_sim", 0)) for log in logging_outputs)
            metrics.log_scalar("template_mse", mse / n, n, round=4)
            metrics.log_scalar("template_sim", sim / n, n, round=4)
