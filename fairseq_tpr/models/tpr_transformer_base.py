"""What the two TP-Transformers share: an encoder and decoder whose cells come from one
layer class, option checks that name the flag and the fix, and a checkpoint check
that explains a mismatch instead of printing a torch shape trace.

The variant (continuous or discrete roles) is chosen once, by the layer classes a model
class names (``encoder_layer``, ``decoder_layer``, and the ``embedding_binding`` it builds)
and :class:`TPRTransformerModelBase` hands to :class:`TPRTransformerEncoder` /
:class:`TPRTransformerDecoder`.
"""
from typing import Dict, Optional, Tuple, Type

import torch.nn as nn
from fairseq.distributed import fsdp_wrap
from fairseq.models.transformer import TransformerConfig, TransformerDecoder, TransformerEncoder, TransformerModel
from fairseq.modules.checkpoint_activations import checkpoint_wrapper
from fairseq.tasks.language_modeling import LanguageModelingTask

from ..checkpoint_mismatch import explain, from_shapes
from ..errors import ConfigError
from .checks import ChecksOptions, check_heads_divide, model_arch, refuse_options
from .dictionaries import task_dictionary
from .scripting import EagerOnly

TPR_SIDES = ("both", "encoder", "decoder")


def wrap_layer(layer: nn.Module, cfg) -> nn.Module:
    """What fairseq's ``build_encoder_layer``/``build_decoder_layer`` put around a new
    layer: activation checkpointing (``--checkpoint-activations``) and FSDP wrapping."""
    checkpoint = cfg.checkpoint_activations
    if checkpoint:
        layer = checkpoint_wrapper(layer, offload_to_cpu=cfg.offload_activations)
    return fsdp_wrap(layer, min_num_params=cfg.min_params_to_wrap if not checkpoint else 0)


class TPRTransformerEncoder(TransformerEncoder):
    """fairseq's encoder with every cell built from ``layer_class``; an optional
    ``embedding_binding`` module takes the ``layernorm_embedding`` slot (applied after
    positions, before dropout)."""

    def __init__(self, args, dictionary, embed_tokens, layer_class: Type[nn.Module],
                 embedding_binding: Optional[Type[nn.Module]] = None):
        self.layer_class = layer_class
        super().__init__(args, dictionary, embed_tokens)
        if embedding_binding is not None:
            self.layernorm_embedding = embedding_binding(embed_tokens.embedding_dim, layer_norm=self.layernorm_embedding)

    def build_encoder_layer(self, cfg):
        cfg = TransformerConfig.from_namespace(cfg)
        return wrap_layer(self.layer_class(cfg, return_fc=self.return_fc), cfg)


class TPRTransformerDecoder(TransformerDecoder):
    """fairseq's decoder with every cell built from ``layer_class`` (see the encoder)."""

    def __init__(self, args, dictionary, embed_tokens, layer_class: Type[nn.Module],
                 embedding_binding: Optional[Type[nn.Module]] = None, no_encoder_attn=False):
        self.layer_class = layer_class
        super().__init__(args, dictionary, embed_tokens, no_encoder_attn=no_encoder_attn)
        if embedding_binding is not None:
            self.layernorm_embedding = embedding_binding(embed_tokens.embedding_dim, layer_norm=self.layernorm_embedding)

    def build_decoder_layer(self, cfg, no_encoder_attn=False):
        cfg = TransformerConfig.from_namespace(cfg)
        return wrap_layer(self.layer_class(cfg, no_encoder_attn=no_encoder_attn), cfg)


class ExplainsCheckpointMismatch:
    """Mixin for a fairseq model class with a ``family`` name: a strict ``load_state_dict`` of a state
    dict that does not fit raises :func:`explain_state_dict_mismatch`'s ConfigError first."""

    def load_state_dict(self, state_dict, strict=True, model_cfg=None, args=None):
        if strict:
            explain_state_dict_mismatch(self, state_dict, self.family)
        return super().load_state_dict(state_dict, strict=strict, model_cfg=model_cfg, args=args)


class TPRTransformerModelBase(EagerOnly, ExplainsCheckpointMismatch, ChecksOptions, TransformerModel):
    """Shared flags, checks, builders and checkpoint loading of the TP-Transformer models."""
    not_scriptable_because = ("its TP attention and role layers keep Python-side state that TorchScript cannot type "
                              "(the role taps of fairseq-tpr-roles, the Triton kernels imported on first use, the "
                              "incremental state of TP attention)")

    # name used in messages, e.g. "continuous-role TP-Transformer"
    family = "TPR transformer"
    # fairseq options that the variant's cells cannot honour
    unsupported_options = ("cross_self_attention",)
    # the variant's cells (fairseq layer subclasses)
    encoder_layer: Type[nn.Module]
    decoder_layer: Type[nn.Module]

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        parser.add_argument("--tpr-in", choices=TPR_SIDES,
                            help="where TPR binding is used: encoder and decoder (both), encoder only, decoder only")
        parser.add_argument("--no-share-all-embeddings", dest="share_all_embeddings", action="store_false",
                            help="untie source, target and output embeddings (for separate dictionaries)")

    @classmethod
    def check_options(cls, args, task):
        """Reject option combinations that cannot work, naming the flag and the fix."""
        arch = getattr(args, "arch", cls.__name__)
        if getattr(args, "tpr_in", "both") not in TPR_SIDES:
            raise ConfigError(f"--tpr-in must be one of {', '.join(TPR_SIDES)} (got {args.tpr_in!r})")
        if isinstance(task, LanguageModelingTask):
            raise ConfigError(f"--arch {arch} is an encoder-decoder model and cannot score or train as a language "
                              f"model (--task language_modeling, fairseq-eval-lm); pass a checkpoint of a language "
                              f"model (--arch tp_transformer_lm, tp_transformer_d_lm, transformer_lm_tp, ...) or use "
                              f"the model's own task (--task translation).")
        if task_dictionary(task, "source") is None or task_dictionary(task, "target") is None:
            raise ConfigError(f"--arch {arch} translates token sequences: use --task translation (or another task "
                              f"with source and target dictionaries), not --task {getattr(args, 'task', '?')}.")
        if getattr(args, "share_all_embeddings", False) and task.source_dictionary != task.target_dictionary:
            raise ConfigError(
                f"--arch {arch} shares source, target and output embeddings (--share-all-embeddings), which needs "
                "one joined dictionary, but the source and target dictionaries differ. Binarize with "
                "`fairseq-preprocess --joined-dictionary`, or pass --no-share-all-embeddings."
            )
        refuse_options(args, cls.unsupported_options, f"by --arch {arch}")
        check_heads_divide(args)

    sides = ("encoder", "decoder")  # the model's attributes of its two sides

    @classmethod
    def tpr_sides(cls, args) -> Tuple[str, ...]:
        """The sides whose cells are the variant's (``--tpr-in``)."""
        return tuple(s for s, on in (("encoder", cls.tpr_encoder(args)), ("decoder", cls.tpr_decoder(args))) if on)

    @classmethod
    def tpr_encoder(cls, args) -> bool:
        return getattr(args, "tpr_in", "both") in ("both", "encoder")

    @classmethod
    def tpr_decoder(cls, args) -> bool:
        return getattr(args, "tpr_in", "both") in ("both", "decoder")

    @classmethod
    def embedding_binding(cls, args) -> Optional[Type[nn.Module]]:
        """The module for the ``layernorm_embedding`` slot of both sides, or None."""
        return None

    @classmethod
    def build_encoder(cls, args, src_dict, embed_tokens):
        if not cls.tpr_encoder(args):
            return TransformerEncoder(args, src_dict, embed_tokens)
        return TPRTransformerEncoder(args, src_dict, embed_tokens, cls.encoder_layer, cls.embedding_binding(args))

    @classmethod
    def build_decoder(cls, args, tgt_dict, embed_tokens):
        no_encoder_attn = getattr(args, "no_cross_attention", False)
        if not cls.tpr_decoder(args):
            return TransformerDecoder(args, tgt_dict, embed_tokens, no_encoder_attn=no_encoder_attn)
        return TPRTransformerDecoder(args, tgt_dict, embed_tokens, cls.decoder_layer, cls.embedding_binding(args),
                                     no_encoder_attn)


def explain_state_dict_mismatch(model: nn.Module, state_dict: Dict, family: str) -> None:
    """Raise a ConfigError that says what differs between ``model`` and ``state_dict`` (the one explainer,
    :mod:`fairseq_tpr.checkpoint_mismatch`), or return if they match. ``family`` is the model's kind."""
    mismatch = from_shapes({k: v.shape for k, v in model.state_dict().items()},
                           {k: v.shape for k, v in state_dict.items() if hasattr(v, "shape")})
    if mismatch is not None:
        raise ConfigError(explain(mismatch, arch=model_arch(model) or "?", model=family))
