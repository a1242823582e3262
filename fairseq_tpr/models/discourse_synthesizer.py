"""Synthesizer document encoder with discourse-tree attention for extractive summarization
(Xiao, Huber & Carenini, "Do We Really Need That Many Parameters In Transformer For Extractive
Summarization? Discourse Can Help!", slides "Extractive Summarization Model", "Synthesizer" and
"Discourse Tree Attention"): ``--arch discourse_synthesizer*`` with ``--task extractive_summarization``.

    x_i^0 = W_in e_i + p_i                       e_i: frozen sentence-encoder vector of unit i,
                                                 p_i: sinusoidal position; W_in = identity when
                                                 the unit vectors already have d_model entries
    h     = LN(x + Attn(x))                      post-LN Synthesizer layer, L times (the
    x'    = LN(h + W_2 relu(W_1 h + b_1) + b_2)   authors' doc_encoder.py; the default)
    s_i   = w_s^T relu(W_m x_i^L + b_m) + b_s     MLP scorer: one logit per unit

    with --normalize-before (pre-LN, BertSum's extractive transformer; what this model did
    before the option existed):
    h     = x + Attn(LN(x)),  x' = h + W_2 relu(W_1 LN(h) + b_1) + b_2,  s_i on LN(x_i^L)

``Attn`` is one class of :mod:`fairseq_tpr.modules.synthesizer_attention`, chosen once by
``--attention dot|dense|random-fixed|random-learned|none|dtree|ctree|ctree-nuc``; only ``dot``
takes ``--attention-heads`` > 1 (as in the slides' table: every other variant has one head).
The model returns ``(logits B x T, extra)`` with ``extra = {"attn": [A per layer, B x H x T x T],
"unit_mask": B x T}``. :meth:`DiscourseSynthesizerModel.parameter_counts` gives the slides'
"# Params(attn)" and "# Params" columns.

Presets: ``discourse_synthesizer_base`` is the slides' "Default Setting" row group (results
table, "d_k = d_v = d_q = 64, d_inner = 3072", two layers, 8 or 1 heads) with d_model 768 (the
BERT-base unit vectors of the paper); ``discourse_synthesizer_tiny`` is for tests.
Deviations: the unit encoder is whatever ``preprocess/extractive.py`` used (all-MiniLM-L6-v2, 384-d,
by default; then W_in maps 384 -> 768 and adds 0.3M parameters to the total); the positions
are sinusoidal (no parameters); the scorer's hidden size (``--scorer-hidden-dim``) is ours, the
slides only say "MLP".
"""
import math

import torch
import torch.nn as nn
from fairseq.models import BaseFairseqModel, register_model, register_model_architecture

from ..errors import ConfigError
from ..modules.synthesizer_attention import ATTENTIONS
from .checks import ChecksOptions
from .discourse_synthesizer_hub import ExtractiveHubInterface, select_units  # noqa: F401 (select_units: its home)
from .hub_entry import plugin_from_pretrained
from .scripting import EagerOnly


class SynthesizerEncoderLayer(nn.Module):
    """Post-LN layer ``h = LN(x + Attn(x))``, ``y = LN(h + FFN(h))`` (the authors' code), or with
    ``normalize_before`` pre-LN ``h = x + Attn(LN(x))``, ``y = h + FFN(LN(h))`` (B x T x C)."""

    def __init__(self, attention, embed_dim, ffn_dim, dropout, normalize_before=False):
        super().__init__()
        self.self_attn = attention
        self.normalize_before = normalize_before
        self.attn_norm = nn.LayerNorm(embed_dim)
        self.ffn_norm = nn.LayerNorm(embed_dim)
        self.fc1, self.fc2 = nn.Linear(embed_dim, ffn_dim), nn.Linear(ffn_dim, embed_dim)
        self.dropout = nn.Dropout(dropout)

    def ffn(self, x):
        return self.dropout(self.fc2(self.dropout(torch.relu(self.fc1(x)))))

    def forward(self, x, pad_mask, tree):
        if self.normalize_before:
            a, A = self.self_attn(self.attn_norm(x), pad_mask, tree)
            h = x + self.dropout(a)
            return h + self.ffn(self.ffn_norm(h)), A
        a, A = self.self_attn(x, pad_mask, tree)
        h = self.attn_norm(x + self.dropout(a))
        return self.ffn_norm(h + self.ffn(h)), A


def sinusoid(n, d):
    """n x d sinusoidal positions (Vaswani et al. 2017, Sec. 3.5)."""
    pos = torch.arange(n, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
    pe = torch.zeros(n, d)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)[:, : d // 2]
    return pe


@register_model("discourse_synthesizer")
class DiscourseSynthesizerModel(EagerOnly, ChecksOptions, BaseFairseqModel):
    """Unit vectors + positions -> L Synthesizer layers -> MLP scorer (module docstring)."""
    not_scriptable_because = ("it scores document units from a collated batch of trees and features (a dict), "
                              "which TorchScript does not compile")

    def __init__(self, args, unit_dim, max_units):
        super().__init__()
        d = self.embed_dim = args.encoder_embed_dim
        self.max_units = max_units
        self.attention_type = args.attention
        self.input_proj = nn.Linear(unit_dim, d) if unit_dim != d else nn.Identity()
        self.register_buffer("positions", sinusoid(max_units, d), persistent=False)
        cls = ATTENTIONS[args.attention]
        extra = {"matrix": args.dtree_matrix} if args.attention == "dtree" else {}
        self.layers = nn.ModuleList(
            SynthesizerEncoderLayer(cls(d, args.attention_heads, args.attention_head_dim, max_units,
                                        args.attention_dropout, **extra), d, args.encoder_ffn_embed_dim, args.dropout)
            for _ in range(args.encoder_layers))
        # the layer-norm placement is kept in the checkpoint (buffer pre_ln), as DTreeAttention keeps its matrix
        self.register_buffer("pre_ln", torch.tensor(False))
        self.final_norm = nn.Identity()
        self.set_normalize_before(bool(args.normalize_before))
        h = args.scorer_hidden_dim
        self.scorer = (nn.Sequential(nn.Linear(d, h), nn.ReLU(), nn.Linear(h, 1)) if h > 0 else nn.Linear(d, 1))
        self.dropout = nn.Dropout(args.dropout)

    def set_normalize_before(self, pre_ln: bool):
        """Pre-LN layers and a final LayerNorm before the scorer (True), or the authors' post-LN
        layers and none (False)."""
        for layer in self.layers:
            layer.normalize_before = pre_ln
        if pre_ln and isinstance(self.final_norm, nn.Identity):
            like = self.layers[0].attn_norm.weight  # the model's device and dtype (a loaded model may be cast)
            self.final_norm = nn.LayerNorm(self.embed_dim, device=like.device, dtype=like.dtype)
        elif not pre_ln:
            self.final_norm = nn.Identity()
        self.pre_ln.fill_(pre_ln)

    def load_state_dict(self, state_dict, strict=True, model_cfg=None, args=None):
        """A checkpoint says its layer-norm placement (``pre_ln``); one from before
        ``--normalize-before`` existed has no ``pre_ln`` and was trained pre-LN."""
        pre_ln = state_dict.get("pre_ln")
        if pre_ln is None:
            state_dict = dict(state_dict, pre_ln=torch.tensor(True))
        self.set_normalize_before(bool(state_dict["pre_ln"]))
        return super().load_state_dict(state_dict, strict=strict, model_cfg=model_cfg, args=args)

    @staticmethod
    def add_args(parser):
        parser.add_argument("--normalize-before", action="store_true", default=None,
                            help="pre-LN layers and a final LayerNorm (BertSum's extractive transformer); "
                                 "default: post-LN, as the authors' code")
        parser.add_argument("--attention", choices=sorted(ATTENTIONS),
                            help="self-attention of every layer: dot-product, Synthesizer dense/random, none, or a "
                                 "discourse-tree matrix")
        parser.add_argument("--attention-heads", type=int, metavar="H", help="heads (only --attention dot takes > 1)")
        parser.add_argument("--dtree-matrix", choices=["parent", "parent-children"],
                            help="--attention dtree: the parent mask P (default, the authors' code) or (P + C) / 2")
        parser.add_argument("--attention-head-dim", type=int, metavar="N", help="d_k = d_v per head")
        parser.add_argument("--encoder-embed-dim", type=int, metavar="N", help="d_model")
        parser.add_argument("--encoder-ffn-embed-dim", type=int, metavar="N", help="d_inner of the feed-forward")
        parser.add_argument("--encoder-layers", type=int, metavar="L", help="Synthesizer layers")
        parser.add_argument("--scorer-hidden-dim", type=int, metavar="N", help="MLP scorer hidden size (0: linear)")
        parser.add_argument("--dropout", type=float, metavar="D")
        parser.add_argument("--attention-dropout", type=float, metavar="D")

    from_pretrained = plugin_from_pretrained  # returns hub_interface
    hub_interface = ExtractiveHubInterface

    @classmethod
    def check_options(cls, args, task):
        dtree_matrix = getattr(args, "dtree_matrix", None)
        discourse_synthesizer_base(args)
        if dtree_matrix == "parent-children" and args.attention != "dtree":
            raise ConfigError(f"--dtree-matrix parent-children with --attention {args.attention}: the D-Tree matrix "
                              f"is used by --attention dtree only; drop --dtree-matrix or use --attention dtree")
        arch = getattr(args, "arch", "discourse_synthesizer")
        if getattr(task, "unit_dim", None) is None:
            raise ConfigError(f"--arch {arch} scores document units: use --task extractive_summarization")
        if args.attention not in ATTENTIONS:
            raise ConfigError(f"--attention {args.attention!r}: choose from {', '.join(sorted(ATTENTIONS))}")
        if args.attention_heads < 1:
            raise ConfigError(f"--attention-heads must be at least 1 (got {args.attention_heads})")
        if args.attention != "dot" and args.attention_heads != 1:
            raise ConfigError(
                f"--attention-heads {args.attention_heads} with --attention {args.attention}: only --attention dot "
                f"has several heads (the slides use 1 for every other variant: "
                f"{', '.join(a for a in sorted(ATTENTIONS) if a != 'dot')}); drop --attention-heads (or pass "
                f"--attention-heads 1), or use --attention dot --attention-heads {args.attention_heads}")

    @classmethod
    def build_checked_model(cls, args, task):
        return cls(args, task.unit_dim, task.cfg.max_units)

    def forward(self, unit_embeddings, unit_mask, tree_spans=None, tree_codes=None, dep_parents=None, **kwargs):
        B, T, _ = unit_embeddings.shape  # B x T x D
        if T > self.max_units:
            raise ConfigError(f"a batch holds a document of {T} units but the model was built for "
                              f"--max-units {self.max_units}: truncate the documents (preprocess/extractive.py "
                              f"--max-units {self.max_units} --truncate) or train with a larger --max-units")
        pad_mask = ~unit_mask
        x = self.input_proj(unit_embeddings) + self.positions[:T]
        x = self.dropout(x) * unit_mask.unsqueeze(-1)
        tree = {"tree_spans": tree_spans, "tree_codes": tree_codes, "dep_parents": dep_parents}
        attn = []
        for layer in self.layers:
            x, A = layer(x, pad_mask, tree)
            attn.append(A)
        logits = self.scorer(self.final_norm(x)).squeeze(-1)  # B x T
        return logits.masked_fill(pad_mask, 0.0), {"attn": attn, "unit_mask": unit_mask}

    def max_positions(self):
        return self.max_units

    def parameter_counts(self):
        """``{"attention", "total", "input_proj"}``: trainable parameters of the self-attention sublayers
        (every layer, value/output projections included), of the whole model, and of W_in."""
        count = lambda m: sum(p.numel() for p in m.parameters() if p.requires_grad)  # noqa: E731
        return {"attention": sum(count(layer.self_attn) for layer in self.layers), "total": count(self),
                "input_proj": count(self.input_proj)}


def discourse_synthesizer_base(args):
    """The slides' default setting (results table, "Default Setting (d_k = d_v = d_q = 64,
    d_inner = 3072)"; "two-layer synthesizer with 8 heads or single head"), d_model 768 (BERT-base
    unit vectors). ``--attention dot --attention-heads 8`` is the table's "Dot Product(8)" row."""
    args.attention = getattr(args, "attention", None) or "dot"
    args.attention_heads = getattr(args, "attention_heads", None) or (8 if args.attention == "dot" else 1)
    args.attention_head_dim = getattr(args, "attention_head_dim", None) or 64
    args.dtree_matrix = getattr(args, "dtree_matrix", None) or "parent"
    args.normalize_before = bool(getattr(args, "normalize_before", None) or False)
    args.encoder_embed_dim = getattr(args, "encoder_embed_dim", None) or 768
    args.encoder_ffn_embed_dim = getattr(args, "encoder_ffn_embed_dim", None) or 3072
    args.encoder_layers = getattr(args, "encoder_layers", None) or 2
    sh = getattr(args, "scorer_hidden_dim", None)
    args.scorer_hidden_dim = 64 if sh is None else sh
    args.dropout = 0.1 if getattr(args, "dropout", None) is None else args.dropout
    args.attention_dropout = 0.0 if getattr(args, "attention_dropout", None) is None else args.attention_dropout


@register_model_architecture("discourse_synthesizer", "discourse_synthesizer")
def discourse_synthesizer(args):
    discourse_synthesizer_base(args)


@register_model_architecture("discourse_synthesizer", "discourse_synthesizer_base")
def discourse_synthesizer_base_arch(args):
    discourse_synthesizer_base(args)


@register_model_architecture("discourse_synthesizer", "discourse_synthesizer_tiny")
def discourse_synthesizer_tiny(args):
    """For tests and CPU demos: d_model 32, d_k = d_v = 8, d_inner 64, 2 layers, scorer 16, dropout 0."""
    args.encoder_embed_dim = getattr(args, "encoder_embed_dim", None) or 32
    args.attention_head_dim = getattr(args, "attention_head_dim", None) or 8
    args.encoder_ffn_embed_dim = getattr(args, "encoder_ffn_embed_dim", None) or 64
    args.scorer_hidden_dim = 16 if getattr(args, "scorer_hidden_dim", None) is None else args.scorer_hidden_dim
    args.dropout = 0.0 if getattr(args, "dropout", None) is None else args.dropout
    discourse_synthesizer_base(args)


@register_model_architecture("discourse_synthesizer", "discourse_synthesizer_balanced")
def discourse_synthesizer_balanced(args):
    """The slides' "Balanced Models (d_k = d_v = d_q = 512, d_inner = 512)" (EDU- and sentence-level tables),
    where attention is a larger share of the parameters; d_model 768, two layers."""
    args.attention_head_dim = getattr(args, "attention_head_dim", None) or 512
    args.encoder_ffn_embed_dim = getattr(args, "encoder_ffn_embed_dim", None) or 512
    discourse_synthesizer_base(args)
