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

from .presets import default_sizes, pre_ln, set_defaults


@register_model_architecture("transformer", "transformer_tp_tiny")
def transformer_tp_tiny(args):
    """Sizes of ``tp_transformer_tiny`` / ``tp_transformer_d_tiny``."""
    default_sizes(args, embed_dim=64, ffn_dim=128, layers=2, heads=4)
    set_defaults(args, dropout=0.0, share_all_embeddings=True)
    pre_ln(args)
    base_architecture(args)


@register_model_architecture("transformer", "transformer_tp_math")
def transformer_tp_math(args):
    """Sizes of ``tp_transformer_math`` (Schlag et al. Table 1, 'Transformer (ours)')."""
    set_defaults(args, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, share_all_embeddings=True)
    pre_ln(args)
    base_architecture(args)


@register_model_architecture("transformer", "transformer_tp_math_small")
def transformer_tp_math_small(args):
    """Sizes of ``tp_transformer_math_small`` (3+3 layers, d 128, d_ff 512, 4 heads)."""
    default_sizes(args, embed_dim=128, ffn_dim=512, layers=3, heads=4)
    transformer_tp_math(args)


@register_model_architecture("transformer", "transformer_tp_wmt_en_de")
def transformer_tp_wmt_en_de(args):
    """``transformer_wmt_en_de`` with pre-LN cells, matched to ``tp_transformer_wmt_en_de``."""
    pre_ln(args)
    transformer_wmt_en_de(args)


@register_model_architecture("transformer", "transformer_tp_d")
def transformer_tp_d(args):
    """Sizes of ``tp_transformer_d`` (Jiang et al. Sec. 3.2, the Transformer baseline)."""
    set_defaults(args, dropout=0.1, share_all_embeddings=True)
    pre_ln(args)
    base_architecture(args)
