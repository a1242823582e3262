"""Plain fairseq ``transformer`` presets matched to each TP preset (same sizes, dropout,
embedding sharing and pre-LN placement), so that a comparison is one ``--arch`` apart:

=============================  ====================================
TP preset                      matched plain Transformer
=============================  ====================================
``tp_transformer_tiny``        ``transformer_tp_tiny``
``tp_transformer_d_tiny``      ``transformer_tp_tiny``
``tp_transformer_math``        ``transformer_tp_math``
``tp_transformer_math_small``  ``transformer_tp_math_small``
``tp_transformer_wmt_en_de``   ``transformer_tp_wmt_en_de``
``tp_transformer_d``           ``transformer_tp_d``
=============================  ====================================

They are fairseq's own TransformerModel (registered under the ``transformer`` model).
"""
from fairseq.models import register_model_architecture
from fairseq.models.transformer import base_architecture, transformer_wmt_en_de

from .tpr_transformer_base import default_sizes


def _prenorm(args):
    args.encoder_normalize_before = getattr(args, "encoder_normalize_before", True)
    args.decoder_normalize_before = getattr(args, "decoder_normalize_before", True)


@register_model_architecture("transformer", "transformer_tp_tiny")
def transformer_tp_tiny(args):
    """Sizes of ``tp_transformer_tiny`` / ``tp_transformer_d_tiny``."""
    default_sizes(args, embed_dim=64, ffn_dim=128, layers=2, heads=4)
    args.dropout = getattr(args, "dropout", 0.0)
    args.share_all_embeddings = getattr(args, "share_all_embeddings", True)
    _prenorm(args)
    base_architecture(args)


@register_model_architecture("transformer", "transformer_tp_math")
def transformer_tp_math(args):
    """Sizes of ``tp_transformer_math`` (Schlag et al. Table 1, 'Transformer (ours)')."""
    args.dropout = getattr(args, "dropout", 0.0)
    args.attention_dropout = getattr(args, "attention_dropout", 0.0)
    args.activation_dropout = getattr(args, "activation_dropout", 0.0)
    args.share_all_embeddings = getattr(args, "share_all_embeddings", True)
    _prenorm(args)
    base_architecture(args)


@register_model_architecture("transformer", "transformer_tp_math_small")
def transformer_tp_math_small(args):
    """Sizes of ``tp_transformer_math_small`` (3+3 layers, d 128, d_ff 512, 4 heads)."""
    default_sizes(args, embed_dim=128, ffn_dim=512, layers=3, heads=4)
    transformer_tp_math(args)


@register_model_architecture("transformer", "transformer_tp_wmt_en_de")
def transformer_tp_wmt_en_de(args):
    """``transformer_wmt_en_de`` with pre-LN cells, matched to ``tp_transformer_wmt_en_de``."""
    _prenorm(args)
    transformer_wmt_en_de(args)


@register_model_architecture("transformer", "transformer_tp_d")
def transformer_tp_d(args):
    """Sizes of ``tp_transformer_d`` (Jiang et al. Sec. 3.2, the Transformer baseline)."""
    args.dropout = getattr(args, "dropout", 0.1)
    args.share_all_embeddings = getattr(args, "share_all_embeddings", True)
    _prenorm(args)
    base_architecture(args)
