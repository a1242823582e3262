"""TP-Transformer with continuous roles (Schlag et al. 2019): ``--arch tp_transformer*``.

Every attention of encoder and decoder is TP-Multi-Head Attention (Eq. 3-6,
:class:`~fairseq_tpr.modules.TPMultiheadAttention`), cells are pre-LN (Eq. 1) and the
embedding layer binds a role to each symbol (Eq. 2,
:class:`~fairseq_tpr.modules.EmbeddingRoleBinding`). Output distribution
``softmax(E^T z)`` with the shared embedding E (Eq. 8) via ``--share-all-embeddings``.

Ablations: ``--tpr-in encoder|decoder|both`` and ``--no-embedding-roles``.

Three options give the authors' code (ischlag/TP-Transformer, ``models/tp-transformer.py``) where
the defaults keep fairseq's choices, which the matched ``transformer_tp_*`` presets share
(docs/tp_transformer.md, deviations): ``--position-table interleaved`` (their sin/cos table),
``--share-embedding-roles`` (one Eq. 2 binding ``W^(p), b^(p)`` for source and target, as their
one embedding module) and ``--ffn-init xavier`` (Xavier uniform ``fc1``/``fc2`` weights).
"""
from fairseq.models import register_model, register_model_architecture
from fairseq.models.transformer import base_architecture, transformer_wmt_en_de

from ..errors import ConfigError
from ..modules import TPDecoderLayer, TPEncoderLayer
from .continuous_roles import ContinuousRoleModel, set_continuous_defaults
from .presets import default_sizes, pre_ln, set_defaults
from .tpr_transformer_base import TPRTransformerModelBase


@register_model("tp_transformer")
class TPTransformerModel(ContinuousRoleModel, TPRTransformerModelBase):
    """Encoder-decoder TP-Transformer with continuous roles (see module docstring)."""

    family = "continuous-role TP-Transformer"
    encoder_layer, decoder_layer = TPEncoderLayer, TPDecoderLayer

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        parser.add_argument("--share-embedding-roles", action="store_true",
                            help="one Eq. 2 role projection W^(p), b^(p) for source and target embeddings, as the "
                                 "authors' code (default: one per side)")

    @classmethod
    def check_options(cls, args, task):
        super().check_options(args, task)
        if args.share_embedding_roles:
            if args.no_embedding_roles or args.tpr_in != "both":
                raise ConfigError(f"--share-embedding-roles shares the Eq. 2 binding of source and target: it needs "
                                  f"embedding roles on both sides; drop --no-embedding-roles / --tpr-in, or the flag "
                                  f"(--arch {args.arch}).")
            if args.encoder_embed_dim != args.decoder_embed_dim:
                raise ConfigError(f"--share-embedding-roles needs --encoder-embed-dim ({args.encoder_embed_dim}) equal "
                                  f"to --decoder-embed-dim ({args.decoder_embed_dim}).")

    @classmethod
    def build_checked_model(cls, args, task):
        """fairseq's build and the authors' build steps (:class:`~.continuous_roles.ContinuousRoleModel`),
        then one Eq. 2 binding for both sides with ``--share-embedding-roles``."""
        model = super().build_checked_model(args, task)
        if args.share_embedding_roles:
            model.decoder.layernorm_embedding.role_proj = model.encoder.layernorm_embedding.role_proj
        return model


def _tp_defaults(args):
    """Defaults every tp_transformer preset shares: pre-LN cells (Eq. 1), TPR everywhere."""
    pre_ln(args)
    set_continuous_defaults(args)
    set_defaults(args, tpr_in="both", share_embedding_roles=False)


@register_model_architecture("tp_transformer", "tp_transformer")
def tp_transformer_base(args):
    """fairseq's ``transformer`` sizes (6+6 layers, d 512, d_ff 2048, 8 heads), pre-LN."""
    _tp_defaults(args)
    base_architecture(args)


@register_model_architecture("tp_transformer", "tp_transformer_tiny")
def tp_transformer_tiny(args):
    """For tests and CPU demos: 2+2 layers, d 64, d_ff 128, 4 heads, dropout 0, shared embeddings."""
    default_sizes(args, embed_dim=64, ffn_dim=128, layers=2, heads=4)
    set_defaults(args, dropout=0.0, share_all_embeddings=True)
    tp_transformer_base(args)


@register_model_architecture("tp_transformer", "tp_transformer_math")
def tp_transformer_math(args):
    """Schlag et al. 2019, Sec. 4 / Table 1 (TP-Transformer): 6+6 layers, d_z 512,
    d_f 2048, 8 heads (d_k 64), dropout 0, shared symbol embedding E (Eq. 8)."""
    set_defaults(args, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, share_all_embeddings=True)
    tp_transformer_base(args)


@register_model_architecture("tp_transformer", "tp_transformer_wmt_en_de")
def tp_transformer_wmt_en_de(args):
    """fairseq's ``transformer_wmt_en_de`` sizes (Schlag et al. ran WMT'14 en-de with fairseq), pre-LN."""
    _tp_defaults(args)
    transformer_wmt_en_de(args)


@register_model_architecture("tp_transformer", "tp_transformer_math_small")
def tp_transformer_math_small(args):
    """CPU-sized variant of ``tp_transformer_math`` for the demo and short runs:
    3+3 layers, d 128, d_ff 512, 4 heads, dropout 0, shared embeddings."""
    default_sizes(args, embed_dim=128, ffn_dim=512, layers=3, heads=4)
    tp_transformer_math(args)
