"""STTR: Summarization Transformer with Template-aware Representation (Sun, Wang, Li): ``--arch sttr*``.

A source encoder and a template encoder (N layers each) share the token embeddings (and
learned positions, if any); their outputs ``H_s``, ``H_t`` are merged by a module from
:mod:`fairseq_tpr.modules.template_fusion` chosen once at build time by ``--template-mode``:

==============  ==============================================  ==========================
flag            encoder output (what the decoder attends to)    paper, Table III
==============  ==============================================  ==========================
``none``        ``H_s`` (templates are read and ignored)         "Transformer"
``concat``      ``[H_s; H_t]`` along time                        "+Connection"
``attention``   ``FFN(g * H_ts + (1 - g) * H_s)`` (Eq. 20-22)     "+Attention" / full model
==============  ==============================================  ==========================

The ``attention`` mode follows the authors' code by default (no AddNorm in Eq. 20, the gate on
``H_ts``, a position-wise feed-forward block after the gate); ``--template-addnorm``,
``--template-gate-on source`` and ``--no-template-ffn`` give the paper's text instead
(:class:`~fairseq_tpr.modules.template_fusion.TemplateAwareAttention`; docs/sttr.md, "Deviations").

"+Attention" (no shifting loss) and the full model differ only in the criterion's
``--template-mse-lambda`` (0 vs 1; see ``label_smoothed_cross_entropy_with_template_mse``).

``--tpr discrete`` builds both encoders and the decoder from the discrete-role TP cells of
``tp_transformer_d`` (Jiang et al. 2021), a combination neither paper has; ``--tpr none`` uses
fairseq's own cells. The decoder is fairseq's (or the TPR) ``TransformerDecoder``, so
incremental decoding and beam search are fairseq's; the encoder output is fairseq's dict plus
``template_aware`` (``H_ts``, ``S x B x C``), ``template_gate`` (``g``) and
``template_aware_padding_mask`` (``B x S``), every entry reordered by
:meth:`STTREncoder.reorder_encoder_out`.

:meth:`STTRModel.forward` returns, in the decoder's ``extra`` dict, ``template_aware`` and
``template_aware_padding_mask`` (lists holding one tensor; empty without the attention mode):
the criterion computes the shifting loss of Eq. 23 from them and from
:meth:`STTRModel.target_embeddings`. With ``--tpr discrete`` it also returns ``role_attn`` (the
role distributions of every binding, as ``tp_transformer_d``). Nothing is kept on ``self``.
"""
from typing import Dict, List, Optional

from fairseq.models import FairseqEncoder, register_model, register_model_architecture
from fairseq.models.transformer import TransformerDecoder, TransformerEncoder, TransformerModel, base_architecture
from torch import Tensor

from ..errors import ConfigError, InputError
from ..modules.role_dictionary import normalized_together
from ..modules.template_fusion import GATE_ON, TemplateAwareAttention, TemplateConcatenation
from ..modules.tp_layers import RoleDecoderLayer, RoleEncoderLayer
from .checks import ChecksOptions, check_heads_divide, refuse_options
from .dictionaries import task_dictionary
from .hub_entry import plugin_from_pretrained
from .sttr_hub import TemplateSummarizerHubInterface
from .presets import default_sizes, set_defaults
from .role_capture import ReturnsRoleAttention
from .role_options import ROLE_CELL_UNSUPPORTED, add_role_dictionary_args, check_role_options, set_role_defaults
from .tpr_transformer_base import TPRTransformerDecoder, TPRTransformerEncoder
from .scripting import EagerOnly

TEMPLATE_MODES = ("none", "concat", "attention")
TPR_KINDS = ("none", "discrete")
_EXTRA_KEYS = ("template_aware", "template_gate", "template_aware_padding_mask")


def _missing_templates():
    return InputError(
        "STTR reads a template with every source, but the batch has no template_tokens: use "
        "--task template_summarization (data binarized with preprocess/templates.sh), or for "
        "fairseq-interactive give 'document<TAB>template' per line."
    )


class SourceOnlyEncoder(FairseqEncoder):
    """``--template-mode none``: the source encoder alone; templates are accepted and ignored
    (Table III "Transformer" on the same data and command line as STTR)."""

    def __init__(self, dictionary, source_encoder: FairseqEncoder):
        super().__init__(dictionary)
        self.source_encoder = source_encoder

    def forward(self, src_tokens, src_lengths=None, template_tokens=None, template_lengths=None,
                return_all_hiddens: bool = False):
        """src_tokens: ``B x S``; returns fairseq's encoder dict (``encoder_out``: ``S x B x C``)."""
        return self.source_encoder(src_tokens, src_lengths=src_lengths, return_all_hiddens=return_all_hiddens)

    def reorder_encoder_out(self, encoder_out: Dict[str, List[Tensor]], new_order):
        return self.source_encoder.reorder_encoder_out(encoder_out, new_order)

    def max_positions(self):
        return self.source_encoder.max_positions()


class STTREncoder(SourceOnlyEncoder):
    """Source encoder + template encoder (shared embeddings) + a fusion module (module docstring)."""

    def __init__(self, dictionary, source_encoder: FairseqEncoder, template_encoder: FairseqEncoder, fusion):
        super().__init__(dictionary, source_encoder)
        self.template_encoder = template_encoder
        self.fusion = fusion

    def forward(self, src_tokens, src_lengths=None, template_tokens=None, template_lengths=None,
                return_all_hiddens: bool = False):
        """src_tokens ``B x S``, template_tokens ``B x T`` (padded like the source). Returns fairseq's
        encoder dict with ``encoder_out`` = the merged states and the ``template_*`` entries."""
        if template_tokens is None:
            raise _missing_templates()
        enc = self.source_encoder(src_tokens, src_lengths=src_lengths, return_all_hiddens=return_all_hiddens)
        tpl = self.template_encoder(template_tokens, src_lengths=template_lengths)
        h_s, source_mask = enc["encoder_out"][0], enc["encoder_padding_mask"][0]  # S x B x C, B x S
        h_t, template_mask = tpl["encoder_out"][0], tpl["encoder_padding_mask"][0]  # T x B x C, B x T
        merged, merged_mask, h_ts, g = self.fusion(h_s, source_mask, h_t, template_mask)
        out = dict(enc)
        out["encoder_out"] = [merged]
        out["encoder_padding_mask"] = [merged_mask]
        out["template_aware"] = [] if h_ts is None else [h_ts]
        out["template_gate"] = [] if g is None else [g]
        out["template_aware_padding_mask"] = [] if h_ts is None else [source_mask]
        return out

    def reorder_encoder_out(self, encoder_out: Dict[str, List[Tensor]], new_order):
        new = self.source_encoder.reorder_encoder_out(encoder_out, new_order)
        for key in ("template_aware", "template_gate"):  # S x B x C
            new[key] = [t.index_select(1, new_order) for t in encoder_out.get(key, [])]
        new["template_aware_padding_mask"] = [  # B x S
            t.index_select(0, new_order) for t in encoder_out.get("template_aware_padding_mask", [])
        ]
        return new


@register_model("sttr")
class STTRModel(EagerOnly, ReturnsRoleAttention, ChecksOptions, TransformerModel):
    """STTR (module docstring). Flags on top of fairseq's transformer: ``--template-mode``,
    ``--tpr``, ``--num-roles``, ``--role-dim``."""
    not_scriptable_because = ("its encoder output carries the template's states and role attention in fields that "
                              "TorchScript cannot type, and its role layers are the TP transformer's")

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        parser.add_argument("--template-mode", choices=TEMPLATE_MODES,
                            help="how templates enter the encoder output: none (plain transformer), concat "
                                 "([H_s; H_t]), attention (STTR Eq. 20-22)")
        parser.add_argument("--tpr", choices=TPR_KINDS,
                            help="none: fairseq's cells; discrete: discrete-role TP cells of tp_transformer_d "
                                 "in both encoders and the decoder")
        add_role_dictionary_args(parser, "with --tpr discrete: ", role_dim_default="embed-dim / heads")
        parser.add_argument("--template-addnorm", action="store_true",
                            help="with --template-mode attention: the paper's AddNorm in Eq. 20, "
                                 "H_ts = LayerNorm(H_s + MultiHead(...)) (default: none, as the authors' code)")
        parser.add_argument("--template-gate-on", choices=GATE_ON,
                            help="which state the gate g multiplies in Eq. 22: template (H_ts, the authors' code; "
                                 "default) or source (H_s, the paper's text)")
        parser.add_argument("--no-template-ffn", action="store_true",
                            help="with --template-mode attention: leave out the position-wise feed-forward block "
                                 "that the authors' code applies after the gated sum (the paper has none)")

    from_pretrained = plugin_from_pretrained  # returns hub_interface
    hub_interface = TemplateSummarizerHubInterface

    @classmethod
    def check_options(cls, args, task):
        arch = getattr(args, "arch", "sttr")
        if args.template_mode not in TEMPLATE_MODES:
            raise ConfigError(f"--template-mode must be one of {', '.join(TEMPLATE_MODES)} (got {args.template_mode!r})")
        if args.tpr not in TPR_KINDS:
            raise ConfigError(f"--tpr must be one of {', '.join(TPR_KINDS)} (got {args.tpr!r})")
        if getattr(args, "template_gate_on", "template") not in GATE_ON:
            raise ConfigError(f"--template-gate-on must be one of {', '.join(GATE_ON)} (got {args.template_gate_on!r})")
        if task_dictionary(task, "source") is None or task_dictionary(task, "target") is None:
            raise ConfigError(f"--arch {arch} summarizes token sequences: use --task template_summarization, not "
                              f"--task {getattr(args, 'task', '?')}.")
        if args.share_all_embeddings and task.source_dictionary != task.target_dictionary:
            raise ConfigError(
                f"--arch {arch} shares source, template, target and output embeddings (as the paper), which needs "
                "one joined dictionary, but the source and target dictionaries differ: binarize with "
                "`fairseq-preprocess --joined-dictionary`."
            )
        check_heads_divide(args)
        if args.tpr != "discrete":
            return
        refuse_options(args, ROLE_CELL_UNSUPPORTED, "with --tpr discrete (the role cells do not honour it)")
        if args.role_dim is None:  # default: embed-dim / heads of the encoder
            args.role_dim = args.encoder_embed_dim // args.encoder_attention_heads
        check_role_options(args, arch, ("encoder", "decoder"), context=" with --tpr discrete")

    @classmethod
    def _source_encoder(cls, args, src_dict, embed_tokens) -> FairseqEncoder:
        if args.tpr == "discrete":
            return TPRTransformerEncoder(args, src_dict, embed_tokens, RoleEncoderLayer)
        return TransformerEncoder(args, src_dict, embed_tokens)

    @classmethod
    def build_encoder(cls, args, src_dict, embed_tokens):
        source = cls._source_encoder(args, src_dict, embed_tokens)
        if args.template_mode == "none":
            return SourceOnlyEncoder(src_dict, source)
        template = cls._source_encoder(args, src_dict, embed_tokens)  # same embed_tokens object: shared
        template.embed_positions = source.embed_positions  # shared (holds weights only with learned positions)
        if args.template_mode == "concat":
            fusion = TemplateConcatenation()
        else:
            fusion = TemplateAwareAttention(args.encoder.embed_dim, args.encoder.attention_heads,
                                            dropout=args.dropout, attention_dropout=args.attention_dropout,
                                            add_norm=args.template_addnorm, gate_on=args.template_gate_on,
                                            position_wise=not args.no_template_ffn)
        return STTREncoder(src_dict, source, template, fusion)

    @classmethod
    def build_decoder(cls, args, tgt_dict, embed_tokens):
        if args.tpr == "discrete":
            return TPRTransformerDecoder(args, tgt_dict, embed_tokens, RoleDecoderLayer)
        return TransformerDecoder(args, tgt_dict, embed_tokens)

    def forward(self, src_tokens, src_lengths, prev_output_tokens, template_tokens=None, template_lengths=None,
                return_all_hiddens: bool = True, features_only: bool = False,
                alignment_layer: Optional[int] = None, alignment_heads: Optional[int] = None):
        """As fairseq's, with the template (``B x T``) as extra input; the decoder's ``extra`` dict
        gains ``template_aware`` (``[H_ts]``, ``S x B x C``) and ``template_aware_padding_mask``
        (``[B x S]``), both empty lists unless ``--template-mode attention``, and with
        ``--tpr discrete`` ``role_attn``: binding name (``encoder.source_encoder.layers.0.self_attn_roles``,
        ``encoder.template_encoder...``, ``decoder...``) -> role distributions ``T x B x H x N_r`` (fp32)."""
        # --tpr discrete: the distributions kept only for this call, the dictionaries normalised together
        # (as tp_transformer_d)
        with self.role_attention() as role_attn, normalized_together(self.role_bindings()):
            encoder_out = self.encoder(src_tokens, src_lengths=src_lengths, template_tokens=template_tokens,
                                       template_lengths=template_lengths, return_all_hiddens=return_all_hiddens)
            x, extra = self.decoder(prev_output_tokens, encoder_out=encoder_out, features_only=features_only,
                                    alignment_layer=alignment_layer, alignment_heads=alignment_heads,
                                    src_lengths=src_lengths, return_all_hiddens=return_all_hiddens)
        if role_attn:
            extra["role_attn"] = role_attn
        extra["template_aware"] = encoder_out.get("template_aware", [])
        extra["template_aware_padding_mask"] = encoder_out.get("template_aware_padding_mask", [])
        return x, extra

    def target_embeddings(self, target: Tensor) -> Tensor:
        """E_t of Eq. 23: the decoder's scaled token embeddings of the target (``B x T`` ->
        ``T x B x C``), without positions (their mean would only encode the length)."""
        return (self.decoder.embed_scale * self.decoder.embed_tokens(target)).transpose(0, 1)


# ----------------------------------------------------------------------------- presets
@register_model_architecture("sttr", "sttr")
def sttr(args):
    """STTR on fairseq's transformer defaults; template-aware attention as the authors' code, shared
    embeddings."""
    set_role_defaults(args, num_roles=50, role_dim=None)
    set_defaults(args, template_mode="attention", tpr="none", share_all_embeddings=True,
                 template_addnorm=False, template_gate_on="template", no_template_ffn=False)
    base_architecture(args)


@register_model_architecture("sttr", "sttr_gigaword")
def sttr_gigaword(args):
    """Sun, Wang, Li Sec. V-B (Gigaword and LCSTS): 6 source + 6 template encoder layers,
    6 decoder layers, d_model 512, 4 heads, d_ff 1024, dropout 0.1, shared source/target/output
    embeddings, post-LN (AddNorm) cells."""
    default_sizes(args, embed_dim=512, ffn_dim=1024, layers=6, heads=4)
    set_defaults(args, dropout=0.1)
    sttr(args)


@register_model_architecture("sttr", "sttr_tiny")
def sttr_tiny(args):
    """For tests and CPU demos: 2+2+2 layers, d 64, d_ff 128, 4 heads, dropout 0 (N_r 8 with --tpr discrete)."""
    default_sizes(args, embed_dim=64, ffn_dim=128, layers=2, heads=4)
    set_defaults(args, num_roles=8, dropout=0.0)
    sttr(args)
