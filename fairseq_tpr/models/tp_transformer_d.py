"""TP-Transformer with a discrete role dictionary (Jiang et al. 2021): ``--arch tp_transformer_d*``.

Every attention sublayer (encoder self, decoder self, decoder cross) is followed, after
its residual, by the role binding of Eq. 4-6
(:class:`~fairseq_tpr.modules.DiscreteRoleBinding`): ``TPR(F) = R * F + F`` with
``R_h = softmax(F W_r^h) r_hat``. Cells are pre-LN, as in the T5 code the paper builds on.

The role attention distributions of every binding are returned in the decoder's
``extra["role_attn"]`` (name -> ``T x B x H x N_r``, fp32) by :meth:`forward`;
``--criterion label_smoothed_cross_entropy_with_roles`` logs how one-hot they are.
"""
from fairseq.models import register_model, register_model_architecture
from fairseq.models.transformer import base_architecture

from ..modules import RoleDecoderLayer, RoleEncoderLayer
from ..modules.role_dictionary import normalized_together
from .presets import default_sizes, pre_ln, set_defaults
from .role_capture import ReturnsRoleAttention
from .role_options import RoleDictionaryModel, set_role_defaults
from .tpr_transformer_base import TPRTransformerModelBase


@register_model("tp_transformer_d")
class TPTransformerDModel(RoleDictionaryModel, ReturnsRoleAttention, TPRTransformerModelBase):
    """Encoder-decoder TP-Transformer with a role dictionary per attention sublayer."""

    family = "discrete-role TP-Transformer"
    encoder_layer, decoder_layer = RoleEncoderLayer, RoleDecoderLayer

    def forward(self, src_tokens, src_lengths, prev_output_tokens, return_all_hiddens: bool = True,
                features_only: bool = False, alignment_layer=None, alignment_heads=None):
        """As fairseq's, plus ``extra["role_attn"]``: binding name (e.g.
        ``encoder.layers.0.self_attn_roles``) -> role distributions ``T x B x H x N_r`` (fp32),
        collected for this call only (:class:`~fairseq_tpr.models.role_capture.ReturnsRoleAttention`). With
        gradients on, all the bindings' dictionaries are normalised in one op for this call (Eq. 4,
        :func:`~fairseq_tpr.modules.role_dictionary.normalized_together`)."""
        with self.role_attention() as role_attn, normalized_together(self.role_bindings()):
            x, extra = super().forward(
                src_tokens, src_lengths, prev_output_tokens, return_all_hiddens=return_all_hiddens,
                features_only=features_only, alignment_layer=alignment_layer, alignment_heads=alignment_heads,
            )
        extra["role_attn"] = role_attn
        return x, extra


@register_model_architecture("tp_transformer_d", "tp_transformer_d")
def tp_transformer_d(args):
    """Jiang et al. 2021, Sec. 3.2 (TPT-d): 6+6 layers, 8 heads, d_k 64, d_m 512, d_f 2048,
    N_r 50 role embeddings of d_r 64 per layer, dropout 0.1, shared embeddings (T5-style)."""
    pre_ln(args)
    set_role_defaults(args, num_roles=50, role_dim=64)
    set_defaults(args, tpr_in="both", dropout=0.1, share_all_embeddings=True)
    base_architecture(args)


@register_model_architecture("tp_transformer_d", "tp_transformer_d_tiny")
def tp_transformer_d_tiny(args):
    """For tests and CPU demos: 2+2 layers, d 64, d_ff 128, 4 heads, N_r 8, d_r 16, dropout 0."""
    default_sizes(args, embed_dim=64, ffn_dim=128, layers=2, heads=4)
    set_defaults(args, num_roles=8, role_dim=16, dropout=0.0)
    tp_transformer_d(args)
