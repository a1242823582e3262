"""TP-Transformer language models: fairseq's decoder-only ``transformer_lm`` with TPR binding,
for ``--task language_modeling`` (``fairseq-train``, ``-validate``, ``-eval-lm``, ``-interactive``,
``fairseq-hydra-train``, the hub's ``sample``/``score``).

* ``--arch tp_transformer_lm*`` (continuous roles, Schlag et al. 2019): every cell's self-attention
  is TP-Multi-Head Attention (Eq. 3-6, :class:`~fairseq_tpr.modules.TPDecoderLayer` without
  cross-attention), and the embedding layer binds a role to each symbol (Eq. 2,
  :class:`~fairseq_tpr.modules.EmbeddingRoleBinding`; ``--no-embedding-roles`` drops it, and
  ``--no-tp-attention`` keeps fairseq's own cells, so that the embedding roles can be measured alone).
  ``--position-table`` and ``--ffn-init`` as for ``tp_transformer``.
* ``--arch tp_transformer_d_lm*`` (a role dictionary, Jiang et al. 2021): after every self-attention
  sublayer's residual, ``TPR(F) = R * F + F`` with ``R_h = softmax(F W_r^h) r_hat`` (Eq. 3-6,
  :class:`~fairseq_tpr.modules.RoleDecoderLayer` without cross-attention); ``--num-roles``,
  ``--role-dim``, ``--role-temperature``, ``--role-scorer``, ``--role-init``, ``--role-kernel`` as for
  ``tp_transformer_d``. The role distributions of every binding come back in
  ``extra["role_attn"]`` (name -> ``T x B x H x N_r``); ``--criterion cross_entropy_with_roles``
  logs how one-hot they are.
* ``--arch transformer_lm_tp*`` (``transformer_lm_tp_d*`` is the same preset): fairseq's own
  ``transformer_lm`` (its decoder, unchanged) with the same sizes, the plain baseline one ``--arch``
  away; a model name of its own (:class:`MatchedTransformerLanguageModel`) so that the presets also
  hold under ``fairseq-hydra-train``.

Each model is fairseq's :class:`TransformerLanguageModel`: its ``build_model`` makes the token
embedding (plain, ``--adaptive-input`` or ``--character-embeddings``), fills
``--max-target-positions`` from ``--tokens-per-sample`` and builds fairseq's decoder; a TP class then
builds its decoder with the same embedding from fairseq's :class:`TransformerDecoder` whose cells
come from the variant's layer class (:class:`~.tpr_transformer_base.TPRTransformerDecoder`) and
drops fairseq's (building it costs one decoder's initialisation, ~1 s at paper size; copying
fairseq's embedding code instead would fork it). Cells are pre-LN, as ``transformer_lm`` forces.

Presets (all share input and output embeddings, sinusoidal positions, pre-LN):

==================  =========================================  =================================
size                TP presets                                 sizes
==================  =========================================  =================================
paper               ``tp_transformer_lm``, ``tp_transformer_d_lm``,  d 512, 6 layers, 8 heads, d_ff 2048,
                    ``transformer_lm_tp`` (= ``transformer_lm``'s)  dropout 0.1; N_r 50, d_r 64
small               ``*_small``                                 d 128, 3 layers, 4 heads, d_ff 512,
                                                               dropout 0.1; N_r 20, d_r 32
tiny (tests)        ``*_tiny``                                  d 64, 2 layers, 4 heads, d_ff 128,
                                                               dropout 0; N_r 8, d_r 16
==================  =========================================  =================================
"""
from typing import Optional, Type

import torch.nn as nn
from fairseq.dataclass.utils import gen_parser_from_dataclass
from fairseq.models import register_model, register_model_architecture
from fairseq.models.transformer_lm import TransformerLanguageModel, TransformerLanguageModelConfig, base_lm_architecture
from fairseq.modules.transformer_layer import TransformerDecoderLayerBase

from ..errors import ConfigError
from ..modules import RoleDecoderLayer, TPDecoderLayer
from ..modules.role_dictionary import normalized_together
from .checks import ChecksOptions, check_heads_divide, refuse_options
from .continuous_roles import ContinuousRoleModel, set_continuous_defaults
from .dictionaries import task_dictionary
from .presets import set_defaults
from .role_capture import ReturnsRoleAttention
from .role_options import RoleDictionaryModel, set_role_defaults
from .tpr_transformer_base import ExplainsCheckpointMismatch, TPRTransformerDecoder
from .scripting import EagerOnly


class TPRLanguageModelBase(EagerOnly, ExplainsCheckpointMismatch, ChecksOptions, TransformerLanguageModel):
    """What the plugin's language models share (the matched ``transformer_lm_tp`` too): fairseq's
    ``transformer_lm`` options, the checks of the task and the positions, the decoder built from
    ``decoder_layer`` (None: fairseq's own), the checkpoint check."""
    not_scriptable_because = ("its forward is fairseq's FairseqLanguageModel.forward(src_tokens, **kwargs), which "
                              "TorchScript does not compile (fairseq's own transformer_lm does not script either), "
                              "and its decoder layers are the TP transformer's")

    family = "TPR language model"
    unsupported_options = ("cross_self_attention",)
    decoder_layer: Optional[Type[nn.Module]] = None  # None: fairseq's decoder and cells
    sides = ("decoder",)  # the model's attribute of its one side

    @classmethod
    def tpr_sides(cls, args):
        """The sides whose cells are the variant's: the decoder."""
        return cls.sides

    @classmethod
    def add_args(cls, parser):
        """fairseq's ``transformer_lm`` options (its dataclass; the presets fill the defaults)."""
        gen_parser_from_dataclass(parser, TransformerLanguageModelConfig(), delete_default=True)

    @classmethod
    def check_options(cls, args, task):
        """A language-modelling task with a dictionary. ``--tokens-per-sample`` above the model's positions
        is not checked here: fairseq-interactive, fairseq-generate and the hub clip generation to the
        positions, as for fairseq's ``transformer_lm``; the commands that read blocks of that many
        tokens refuse in one line where they read them (``fairseq_fixes/tasks.py``,
        ``fix_blocks_beyond_positions``)."""
        arch = getattr(args, "arch", cls.__name__)
        task_cfg = getattr(task, "cfg", None) or getattr(task, "args", None)
        tokens = getattr(task_cfg, "tokens_per_sample", None)
        if tokens is None or task_dictionary(task, "target") is None:
            raise ConfigError(f"--arch {arch} is a language model: use --task language_modeling (a data directory "
                              f"with dict.txt from `fairseq-preprocess --only-source`), not --task "
                              f"{getattr(task_cfg, '_name', None) or getattr(args, 'task', '?')}.")
        refuse_options(args, cls.unsupported_options, f"by --arch {arch}")
        check_heads_divide(args, sides=("decoder",))

    @classmethod
    def embedding_binding(cls, args) -> Optional[Type[nn.Module]]:
        """The module for the decoder's ``layernorm_embedding`` slot, or None."""
        return None

    @classmethod
    def cell(cls, args) -> Optional[Type[nn.Module]]:
        """The decoder's cell class (None: fairseq's decoder as it is, and no embedding binding)."""
        return cls.decoder_layer

    @classmethod
    def build_checked_model(cls, args, task):
        """fairseq's build (embedding, positions, defaults), then the decoder with the variant's cells."""
        fairseq_model = super().build_checked_model(args, task)
        if cls.cell(args) is None:
            return fairseq_model
        decoder = TPRTransformerDecoder(args, task.target_dictionary, fairseq_model.decoder.embed_tokens,
                                        cls.cell(args), cls.embedding_binding(args), no_encoder_attn=True)
        return cls(decoder)


@register_model("transformer_lm_tp")
class MatchedTransformerLanguageModel(TPRLanguageModelBase):
    """fairseq's ``transformer_lm`` as it is (its decoder and cells), with the checks of the TP language
    models; its own model name, registered without fairseq's config dataclass, so that its presets
    set the sizes under ``fairseq-hydra-train`` too (``transformer_lm``'s dataclass defaults would win
    over a preset there)."""

    family = "Transformer language model"


@register_model("tp_transformer_lm")
class TPTransformerLanguageModel(ContinuousRoleModel, TPRLanguageModelBase):
    """Decoder-only TP-Transformer with continuous roles (module docstring)."""

    family = "continuous-role TP-Transformer language model"
    decoder_layer = TPDecoderLayer

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        parser.add_argument("--no-tp-attention", action="store_true",
                            help="fairseq's own cells (plain self-attention) under Eq. 2's embedding roles: the "
                                 "embedding roles alone, an ablation")

    @classmethod
    def check_options(cls, args, task):
        super().check_options(args, task)
        if args.no_tp_attention and args.no_embedding_roles:
            raise ConfigError(f"--no-tp-attention with --no-embedding-roles leaves no TPR in --arch {args.arch}: "
                              "that is fairseq's transformer_lm (--arch transformer_lm_tp at the same sizes); drop "
                              "one of the two flags.")

    @classmethod
    def cell(cls, args):
        """TP-Multi-Head Attention cells, or fairseq's own with ``--no-tp-attention``."""
        return TransformerDecoderLayerBase if getattr(args, "no_tp_attention", False) else TPDecoderLayer


@register_model("tp_transformer_d_lm")
class TPTransformerDLanguageModel(RoleDictionaryModel, ReturnsRoleAttention, TPRLanguageModelBase):
    """Decoder-only TP-Transformer with a role dictionary after every self-attention sublayer."""

    family = "discrete-role TP-Transformer language model"
    decoder_layer = RoleDecoderLayer

    def forward(self, src_tokens, **kwargs):
        """As fairseq's (``src_tokens``: ``B x T``, returns ``B x T x V`` logits and ``extra``), plus
        ``extra["role_attn"]``: binding name (``decoder.layers.0.self_attn_roles``, ...) -> role
        distributions ``T x B x H x N_r`` (fp32) of this call. With gradients on, all the bindings'
        dictionaries are normalised in one op for this call (Eq. 4, ``normalized_together``)."""
        with self.role_attention() as role_attn, normalized_together(self.role_bindings()):
            x, extra = super().forward(src_tokens, **kwargs)
        extra["role_attn"] = role_attn
        return x, extra


# ----------------------------------------------------------------------------- presets
# the plain presets give the sizes; each TP preset is its plain preset plus the binding's options


@register_model_architecture("transformer_lm_tp", "transformer_lm_tp")
@register_model_architecture("transformer_lm_tp", "transformer_lm_tp_d")
def transformer_lm_tp(args):
    """``transformer_lm``'s sizes (d 512, 6 layers, 8 heads, d_ff 2048, dropout 0.1, pre-LN, sinusoidal
    positions) with tied input and output embeddings."""
    set_defaults(args, share_decoder_input_output_embed=True)
    base_lm_architecture(args)


@register_model_architecture("transformer_lm_tp", "transformer_lm_tp_small")
@register_model_architecture("transformer_lm_tp", "transformer_lm_tp_d_small")
def transformer_lm_tp_small(args):
    """The CPU size of the perplexity table: d 128, 3 layers, 4 heads, d_ff 512, dropout 0.1."""
    set_defaults(args, decoder_embed_dim=128, decoder_ffn_embed_dim=512, decoder_layers=3, decoder_attention_heads=4)
    transformer_lm_tp(args)


@register_model_architecture("transformer_lm_tp", "transformer_lm_tp_tiny")
@register_model_architecture("transformer_lm_tp", "transformer_lm_tp_d_tiny")
def transformer_lm_tp_tiny(args):
    """For tests and CPU demos: d 64, 2 layers, 4 heads, d_ff 128, dropout 0."""
    set_defaults(args, decoder_embed_dim=64, decoder_ffn_embed_dim=128, decoder_layers=2, decoder_attention_heads=4,
                 dropout=0.0)
    transformer_lm_tp(args)


def _continuous(args):
    set_continuous_defaults(args)
    set_defaults(args, no_tp_attention=False)


@register_model_architecture("tp_transformer_lm", "tp_transformer_lm")
def tp_transformer_lm(args):
    """``transformer_lm_tp`` with TP attention and embedding roles."""
    _continuous(args)
    transformer_lm_tp(args)


@register_model_architecture("tp_transformer_lm", "tp_transformer_lm_small")
def tp_transformer_lm_small(args):
    """``transformer_lm_tp_small`` with TP attention and embedding roles."""
    _continuous(args)
    transformer_lm_tp_small(args)


@register_model_architecture("tp_transformer_lm", "tp_transformer_lm_tiny")
def tp_transformer_lm_tiny(args):
    """``transformer_lm_tp_tiny`` with TP attention and embedding roles."""
    _continuous(args)
    transformer_lm_tp_tiny(args)


@register_model_architecture("tp_transformer_d_lm", "tp_transformer_d_lm")
def tp_transformer_d_lm(args):
    """``transformer_lm_tp_d`` with a role dictionary of N_r 50 roles of d_r 64 (Jiang et al.'s) per cell."""
    set_role_defaults(args, num_roles=50, role_dim=64)
    transformer_lm_tp(args)


@register_model_architecture("tp_transformer_d_lm", "tp_transformer_d_lm_small")
def tp_transformer_d_lm_small(args):
    """``transformer_lm_tp_d_small`` with a role dictionary of N_r 20 roles of d_r 32 per cell."""
    set_role_defaults(args, num_roles=20, role_dim=32)
    transformer_lm_tp_small(args)


@register_model_architecture("tp_transformer_d_lm", "tp_transformer_d_lm_tiny")
def tp_transformer_d_lm_tiny(args):
    """``transformer_lm_tp_d_tiny`` with a role dictionary of N_r 8 roles of d_r 16 per cell."""
    set_role_defaults(args, num_roles=8, role_dim=16)
    transformer_lm_tp_tiny(args)
