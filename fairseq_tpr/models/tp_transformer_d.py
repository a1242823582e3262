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
from ..modules import DiscreteRoleBinding, RoleDecoderLayer, RoleEncoderLayer
from ..modules.role_dictionary import KERNELS
from .role_capture import ReturnsRoleAttention
from .presets import default_sizes, pre_ln, set_defaults
from .checks import check_num_roles, check_role_dim
from .tpr_transformer_base import TPRTransformerModelBase


def add_role_study_args(parser, context: str = "") -> None:
    """``--role-temperature`` and ``--role-scorer``, two departures from Eq. 5 for studying how
    one-hot the role distributions become, ``--role-init``, the authors' initialisation of the
    dictionary, and ``--role-kernel``, which code computes Eq. 5-6 (``context`` prefixes their help,
    e.g. "with --tpr discrete: ")."""
    parser.add_argument("--role-temperature", type=float, metavar="TAU",
                        help=f"{context}divide the role logits F W_r by TAU before the softmax of Eq. 5 "
                             "(default 1: the paper; below 1 sharper role distributions)")
    parser.add_argument("--role-scorer", choices=DiscreteRoleBinding.SCORERS,
                        help=f"{context}paper (default): W_r without bias, Xavier uniform, as Eq. 5; authors: "
                             "with a bias and torch's nn.Linear initialisation, as the authors' code")
    parser.add_argument("--role-init", choices=DiscreteRoleBinding.ROLE_INITS,
                        help=f"{context}the role dictionary's initialisation: normal (default, N(0, 1)) or xavier "
                             "(Xavier uniform with gain 1.414, as the authors' code)")
    parser.add_argument("--role-kernel", choices=KERNELS,
                        help=f"{context}auto (default): Eq. 5-6 as fused Triton kernels where a GPU run measured "
                             "them faster (modules/role_dictionary.py FUSED_MEASURED_FASTER: none yet), torch ops "
                             "elsewhere; eager: always the torch ops; triton: always the kernels on a CUDA GPU (CPU "
                             "only under TRITON_INTERPRET=1)")


# fairseq options that only fairseq's own cell forward honours (the role cells write their own)
ROLE_CELL_UNSUPPORTED = ("cross_self_attention", "scale_attn", "scale_fc", "scale_heads", "scale_resids")


def add_role_dictionary_args(parser) -> None:
    """``--num-roles``, ``--role-dim`` and the role study options (:func:`add_role_study_args`) of the
    models with a role dictionary in every cell (encoder-decoder and language model)."""
    parser.add_argument("--num-roles", type=int, metavar="N_r", help="role embeddings per dictionary (N_r)")
    parser.add_argument("--role-dim", type=int, metavar="d_r",
                        help="size of a role embedding (d_r); heads x d_r must equal the embedding size")
    add_role_study_args(parser)


@register_model("tp_transformer_d")
class TPTransformerDModel(ReturnsRoleAttention, TPRTransformerModelBase):
    """Encoder-decoder TP-Transformer with a role dictionary per attention sublayer."""

    family = "discrete-role TP-Transformer"
    unsupported_options = ROLE_CELL_UNSUPPORTED
    encoder_layer, decoder_layer = RoleEncoderLayer, RoleDecoderLayer

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        add_role_dictionary_args(parser)

    @classmethod
    def check_options(cls, args, task):
        super().check_options(args, task)
        check_num_roles(args, getattr(args, "arch", "tp_transformer_d"))
        sides = [s for s, on in (("encoder", cls.tpr_encoder(args)), ("decoder", cls.tpr_decoder(args))) if on]
        for side in sides:
            check_role_dim(args, side)

    def forward(self, src_tokens, src_lengths, prev_output_tokens, return_all_hiddens: bool = True,
                features_only: bool = False, alignment_layer=None, alignment_heads=None):
        """As fairseq's, plus ``extra["role_attn"]``: binding name (e.g.
        ``encoder.layers.0.self_attn_roles``) -> role distributions ``T x B x H x N_r`` (fp32),
        collected for this call only (:class:`~fairseq_tpr.models.role_capture.ReturnsRoleAttention`)."""
        with self.role_attention() as role_attn:
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
    set_defaults(args, tpr_in="both", num_roles=50, role_dim=64, role_temperature=1.0, role_scorer="paper",
                 role_init="normal", role_kernel="auto", dropout=0.1, share_all_embeddings=True)
    base_architecture(args)


@register_model_architecture("tp_transformer_d", "tp_transformer_d_tiny")
def tp_transformer_d_tiny(args):
    """For tests and CPU demos: 2+2 layers, d 64, d_ff 128, 4 heads, N_r 8, d_r 16, dropout 0."""
    default_sizes(args, embed_dim=64, ffn_dim=128, layers=2, heads=4)
    set_defaults(args, num_roles=8, role_dim=16, dropout=0.0)
    tp_transformer_d(args)
