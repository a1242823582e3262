"""Cross-entropy (fairseq's ``cross_entropy``, what its language-model training uses) that also logs
``role_onehot``: the share of role distributions, one per real target token, head and binding,
whose maximum exceeds ``--role-onehot-threshold`` (0.98, Jiang et al. 2021, Sec. 5). It reads
``extra["role_attn"]`` of a model with discrete roles (``tp_transformer_d_lm``, ``tp_transformer_d``)
and logs nothing more than fairseq's criterion for other models, so that the three models of a
comparison train with one ``--criterion``. The loss is fairseq's, unchanged.
"""
from dataclasses import dataclass, field

import torch
from fairseq.criterions import register_criterion
from fairseq.criterions.cross_entropy import CrossEntropyCriterion, CrossEntropyCriterionConfig

from .label_smoothed_cross_entropy_with_roles import log_role_onehot, pooled, role_onehot_counts_by_side


@dataclass
class CrossEntropyWithRolesConfig(CrossEntropyCriterionConfig):
    role_onehot_threshold: float = field(
        default=0.98, metadata={"help": "a role distribution counts as one-hot when its maximum exceeds this"}
    )


@register_criterion("cross_entropy_with_roles", dataclass=CrossEntropyWithRolesConfig)
class CrossEntropyWithRolesCriterion(CrossEntropyCriterion):
    def __init__(self, task, sentence_avg, role_onehot_threshold=0.98):
        super().__init__(task, sentence_avg)
        self.role_onehot_threshold = role_onehot_threshold

    def forward(self, model, sample, reduce=True):
        """fairseq's ``cross_entropy`` forward (one model call), plus ``role_onehot_n`` / ``role_dists``
        when the model returns role distributions (``T x B x H x N_r`` per binding)."""
        net_output = model(**sample["net_input"])
        loss, _ = self.compute_loss(model, net_output, sample, reduce=reduce)
        sample_size = sample["target"].size(0) if self.sentence_avg else sample["ntokens"]
        logging_output = {
            "loss": loss.data,
            "ntokens": sample["ntokens"],
            "nsentences": sample["target"].size(0),
            "sample_size": sample_size,
        }
        role_attn = net_output[1].get("role_attn") if isinstance(net_output[1], dict) else None
        if role_attn:
            with torch.no_grad():
                src = sample["net_input"].get("src_tokens", sample["target"])
                counts = role_onehot_counts_by_side(role_attn, src.ne(self.padding_idx),
                                                    sample["target"].ne(self.padding_idx), self.role_onehot_threshold)
            logging_output["role_onehot_n"], logging_output["role_dists"] = pooled(counts)
        return loss, sample_size, logging_output

    @classmethod
    def reduce_metrics(cls, logging_outputs) -> None:
        super().reduce_metrics(logging_outputs)
        log_role_onehot(logging_outputs)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
