"""ATPL: the Attentive Tensor Product Learning decoder (Huang et al., Sec. 3.3-5) in fairseq.

- ``--arch atpl*`` (task ``image_captioning``): image feature ``v`` (e.g. 2048-d ResNet-152
  pool5) -> ATPL decoder -> caption (Sec. 4, Fig. 2).
- ``--arch atpl_autoencoder*`` (task ``translation`` with source = target = the sentence):
  an LSTM sentence encoder whose final state is ``v``, and the ATPL decoder that rebuilds
  the sentence (Sec. 5.1, Fig. 3). ``fairseq-tpr-unbinding`` dumps its unbinding vectors u_t.

The decoder, step t (input token ``x_{t-1}``, ``x_0`` = fairseq's ``</s>`` begin symbol):

    S~_{t-1} = S~_{t-2} + (W_e x_{t-1}) u_{t-1}^T        (dual TPR, Eq. 6; S~_0 = 0, u_0 = 0)
    h_{t-1}, c_{t-1} = LSTM(E x_{t-1}, h_{t-2}, c_{t-2})  (the external LSTM, zero initial state)
    f_t, u_t, S_t = ATPLCell(v, h_{t-1}, S~_{t-1})        (Sec. 3.3, see modules/atpl_cell.py)
    p(x_t | x_<t, v) = softmax(W_o f_t + b_o)

Choices the paper leaves open (docs/atpl.md lists all of them): the LSTM reads its own
input embedding ``E`` (``--decoder-embed-dim``), separate from the d-dimensional filler
embedding ``W_e`` of the TPR; the LSTM does not see ``v`` (the image enters through ``S_t``
only); the output layer is a separate linear map of ``f_t`` unless
``--share-filler-output-embed`` ties it to ``W_e`` (``logits = W_e^T f_t``, the reading of
Eq. 7 ``f_t = W_e x_t``); dropout on ``E x`` and on ``f_t``.

Incremental decoding keeps ``h, c`` (layers x B x H), ``S~`` (B x d x d) and the last ``u``
(B x d) under this decoder's incremental-state key; ``reorder_incremental_state``
reorders all four for beam search.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq import utils
from fairseq.models import FairseqEncoderDecoderModel, register_model, register_model_architecture

from ..errors import ConfigError
from ..modules.atpl_cell import ATPLCell
from .captioning_base import (
    DEFAULT_MAX_TARGET_POSITIONS,
    ImageCaptioningModel,
    RecurrentCaptionDecoder,
    VectorEncoder,
    default_length_limits,
    init_embedding,
)
from .checks import ChecksOptions
from .dictionaries import task_dictionary
from .presets import set_defaults
from .scripting import EagerOnly


# --------------------------------------------------------------------------- encoders
class SentenceLSTMEncoder(VectorEncoder):
    """The LSTM encoder of the ATPL autoencoder (Sec. 5.1, Fig. 3): ``v`` is the final hidden
    state of the last layer (both directions concatenated when bidirectional), B x D."""

    def __init__(self, dictionary, embed_dim, hidden_size, num_layers=1, bidirectional=True, dropout=0.0,
                 left_pad=True):
        super().__init__(dictionary)
        self.padding_idx = dictionary.pad()
        self.left_pad = left_pad
        self.embed_tokens = init_embedding(nn.Embedding(len(dictionary), embed_dim, padding_idx=self.padding_idx))
        self.lstm = nn.LSTM(embed_dim, hidden_size, num_layers=num_layers, bidirectional=bidirectional)
        self.dropout = nn.Dropout(dropout)
        self.output_dim = hidden_size * (2 if bidirectional else 1)
        self.bidirectional = bidirectional

    def forward(self, src_tokens, src_lengths, **kwargs):
        if self.left_pad:  # pack_padded_sequence wants right padding
            src_tokens = utils.convert_padding_direction(src_tokens, self.padding_idx, left_to_right=True)
        x = self.dropout(self.embed_tokens(src_tokens)).transpose(0, 1)  # T x B x C
        packed = nn.utils.rnn.pack_padded_sequence(x, src_lengths.cpu(), enforce_sorted=False)
        _, (h_n, _) = self.lstm(packed)  # h_n: (layers * dirs) x B x H
        if self.bidirectional:
            v = torch.cat([h_n[-2], h_n[-1]], dim=-1)  # B x 2H: last layer, forward and backward
        else:
            v = h_n[-1]
        return {"v": [v]}


# --------------------------------------------------------------------------- decoder
class ATPLDecoder(RecurrentCaptionDecoder):
    """The ATPL decoder (module docstring); ``encoder_out["v"][0]`` is ``v`` (B x d_v)."""

    STATE_KEY = "atpl_state"
    STATE_BATCH_DIMS = {"h": 1, "c": 1, "S_tilde": 0, "u": 0}

    def __init__(self, dictionary, v_dim, embed_dim, hidden_size, tpr_dim, num_layers=1, dropout=0.0,
                 share_filler_output_embed=False, max_target_positions=DEFAULT_MAX_TARGET_POSITIONS):
        super().__init__(dictionary, max_target_positions)
        V, pad = len(dictionary), dictionary.pad()
        self.hidden_size, self.num_layers, self.d = hidden_size, num_layers, tpr_dim
        self.embed_tokens = nn.Embedding(V, embed_dim, padding_idx=pad)  # E: LSTM input
        self.filler_embed = nn.Embedding(V, tpr_dim, padding_idx=pad)  # W_e: TPR fillers
        for emb in (self.embed_tokens, self.filler_embed):
            init_embedding(emb)
        self.lstm = nn.LSTM(embed_dim, hidden_size, num_layers=num_layers)
        self.cell = ATPLCell(v_dim, hidden_size, tpr_dim)
        self.dropout = nn.Dropout(dropout)
        self.share_filler_output_embed = share_filler_output_embed
        self.output_projection = None if share_filler_output_embed else nn.Linear(tpr_dim, V)

    # state ------------------------------------------------------------------
    def _initial_state(self, B, ref):
        L, H, d = self.num_layers, self.hidden_size, self.d
        return {"h": ref.new_zeros(L, B, H), "c": ref.new_zeros(L, B, H),
                "S_tilde": ref.new_zeros(B, d, d), "u": ref.new_zeros(B, d)}

    def extract_features(self, prev_output_tokens, encoder_out=None, incremental_state=None, **kwargs):
        """Returns fillers ``f_t`` (B x T x d) and ``{"attn": [None], "u": B x T x d}``."""
        v = self.image_feature(encoder_out)  # B x d_v
        prev_output_tokens, state = self.resume(prev_output_tokens, incremental_state)
        if state is None:
            state = self._initial_state(prev_output_tokens.size(0), v)
        tokens = prev_output_tokens.t()  # T x B
        x = self.dropout(self.embed_tokens(tokens))  # T x B x C
        H, (h, c) = self.lstm(x, (state["h"], state["c"]))  # T x B x hidden
        E = self.filler_embed(tokens)  # T x B x d
        Fs, Us, S_tilde, u_last = self.cell.forward_sequence(v, H, E, state["S_tilde"], state["u"])
        self.keep(incremental_state, {"h": h, "c": c, "S_tilde": S_tilde, "u": u_last})
        f = self.dropout(Fs).transpose(0, 1)  # B x T x d
        return f, {"attn": [None], "u": Us.transpose(0, 1)}

    def output_layer(self, features, **kwargs):
        if self.share_filler_output_embed:
            return F.linear(features, self.filler_embed.weight)  # W_e^T f_t
        return self.output_projection(features)


# --------------------------------------------------------------------------- models
def _add_decoder_args(parser):
    parser.add_argument("--decoder-embed-dim", type=int, metavar="N", help="LSTM input embedding size (E)")
    parser.add_argument("--decoder-hidden-size", type=int, metavar="N", help="LSTM hidden size (paper: 512)")
    parser.add_argument("--decoder-layers", type=int, metavar="N", help="LSTM layers")
    parser.add_argument("--tpr-dim", type=int, metavar="N", help="TPR size d, a power of two (paper: 32)")
    parser.add_argument("--dropout", type=float, metavar="D", help="dropout on embeddings, image feature and f_t")
    parser.add_argument("--share-filler-output-embed", action="store_true",
                        help="logits = W_e^T f_t (the filler embedding of the TPR) instead of a separate linear layer")


def check_tpr_dim(args) -> None:
    """``--tpr-dim`` d must be a power of two: the unbinding vectors come from the d x d Hadamard
    matrix U (Sylvester's construction; modules/atpl_cell.py)."""
    d = getattr(args, "tpr_dim", None)  # None: the arch preset sets it
    if d is None or (d >= 1 and d & (d - 1) == 0):
        return
    below = 1 << (max(d, 1).bit_length() - 1)
    raise ConfigError(f"--tpr-dim {d} is not a power of two: the roles u_t are made from the d x d Hadamard "
                      f"matrix U (Sylvester's construction), which exists for d = 1, 2, 4, 8, ... only; pass "
                      f"--tpr-dim {below} or {below * 2} (the paper uses 32).")


def _build_atpl_decoder(args, tgt_dict, v_dim):
    return ATPLDecoder(
        tgt_dict, v_dim, args.decoder_embed_dim, args.decoder_hidden_size, args.tpr_dim,
        num_layers=args.decoder_layers, dropout=args.dropout,
        share_filler_output_embed=args.share_filler_output_embed,
        max_target_positions=args.max_target_positions,
    )


@register_model("atpl")
class ATPLModel(ImageCaptioningModel):
    """ATPL image captioner (Huang et al., Sec. 4, Fig. 2): image feature -> ATPL decoder."""

    @classmethod
    def add_args(cls, parser):
        _add_decoder_args(parser)
        super().add_args(parser)  # --image-feature-dim

    @staticmethod
    def base_preset(args):
        atpl_base(args)

    @classmethod
    def check_options(cls, args, task):
        check_tpr_dim(args)

    @classmethod
    def build_caption_decoder(cls, args, dictionary, v_dim):
        return _build_atpl_decoder(args, dictionary, v_dim)


@register_model("atpl_autoencoder")
class ATPLAutoencoderModel(EagerOnly, ChecksOptions, FairseqEncoderDecoderModel):
    """ATPL sentence autoencoder (Huang et al., Sec. 5.1, Fig. 3): LSTM encoder -> v -> ATPL
    decoder rebuilding the sentence. Train it with ``--task translation`` on source = target;
    ``fairseq-tpr-unbinding`` reads the unbinding vectors u_t off its decoder."""
    not_scriptable_because = ("its forward is fairseq's FairseqEncoderDecoderModel.forward(..., **kwargs), which "
                              "TorchScript does not compile")

    @staticmethod
    def add_args(parser):
        _add_decoder_args(parser)
        parser.add_argument("--encoder-embed-dim", type=int, metavar="N")
        parser.add_argument("--encoder-hidden-size", type=int, metavar="N")
        parser.add_argument("--encoder-layers", type=int, metavar="N")
        parser.add_argument("--encoder-unidirectional", action="store_true",
                            help="a forward LSTM encoder (default: bidirectional, v = both final states)")

    @classmethod
    def check_options(cls, args, task):
        if task_dictionary(task, "source") is None or task_dictionary(task, "target") is None:
            raise ConfigError(f"--arch {getattr(args, 'arch', 'atpl_autoencoder')} reads a sentence: use "
                              f"--task translation with the same text as source and target")
        check_tpr_dim(args)

    @classmethod
    def build_checked_model(cls, args, task):
        atpl_autoencoder_base(args)
        default_length_limits(args, "max_source_positions", "max_target_positions")
        encoder = SentenceLSTMEncoder(
            task.source_dictionary, args.encoder_embed_dim, args.encoder_hidden_size,
            num_layers=args.encoder_layers, bidirectional=not args.encoder_unidirectional, dropout=args.dropout,
            left_pad=utils.eval_bool(str(getattr(args, "left_pad_source", True))),
        )
        decoder = _build_atpl_decoder(args, task.target_dictionary, encoder.output_dim)
        return cls(encoder, decoder, args.max_source_positions)

    def __init__(self, encoder, decoder, max_source_positions=DEFAULT_MAX_TARGET_POSITIONS):
        super().__init__(encoder, decoder)
        self.max_source_positions = max_source_positions

    def max_positions(self):
        return (self.max_source_positions, self.decoder.max_positions())


# --------------------------------------------------------------------------- presets
def atpl_base(args):
    """Defaults of every ``atpl`` preset: the paper's d = 32 and a 512-unit LSTM (Sec. 4)."""
    set_defaults(args, decoder_embed_dim=512, decoder_hidden_size=512, decoder_layers=1, tpr_dim=32, dropout=0.3,
                 share_filler_output_embed=False)


@register_model_architecture("atpl", "atpl")
def atpl_arch(args):
    atpl_base(args)


@register_model_architecture("atpl", "atpl_coco")
def atpl_coco(args):
    """Huang et al., Sec. 4 / Table 1 (ATPL on COCO, ResNet-152 features): d = 32, LSTM hidden 512.
    The LSTM input embedding (512) and dropout 0.3 are our choices (the paper does not give them)."""
    atpl_base(args)


@register_model_architecture("atpl", "atpl_tiny")
def atpl_tiny(args):
    """For tests and CPU demos: d 8, LSTM 32, embeddings 16, dropout 0."""
    set_defaults(args, decoder_embed_dim=16, decoder_hidden_size=32, tpr_dim=8, dropout=0.0)
    atpl_base(args)


def atpl_autoencoder_base(args):
    set_defaults(args, encoder_embed_dim=256, encoder_hidden_size=512, encoder_layers=1, encoder_unidirectional=False,
                 decoder_embed_dim=256)
    atpl_base(args)


@register_model_architecture("atpl_autoencoder", "atpl_autoencoder")
def atpl_autoencoder_arch(args):
    """Sec. 5.1: LSTM encoder, ATPL decoder with d = 32 and a 512-unit LSTM; encoder sizes are ours."""
    atpl_autoencoder_base(args)


@register_model_architecture("atpl_autoencoder", "atpl_autoencoder_tiny")
def atpl_autoencoder_tiny(args):
    """For tests and CPU demos: bidirectional LSTM encoder 32, ATPL d 8 with LSTM 32, dropout 0."""
    set_defaults(args, encoder_embed_dim=16, encoder_hidden_size=32, decoder_embed_dim=16, decoder_hidden_size=32,
                 tpr_dim=8, dropout=0.0)
    atpl_autoencoder_base(args)
