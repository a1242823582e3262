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
from fairseq.models import (
    FairseqEncoder,
    FairseqEncoderDecoderModel,
    FairseqIncrementalDecoder,
    register_model,
    register_model_architecture,
)

from ..modules.atpl_cell import ATPLCell, hadamard_matrix
from .hydra_args import accepts_hydra_config
from .hub_entry import plugin_from_pretrained

DEFAULT_MAX_TARGET_POSITIONS = 1024


# --------------------------------------------------------------------------- encoders
class ImageFeatureEncoder(FairseqEncoder):
    """Passes the precomputed image feature ``v`` (B x D, from ``sample["net_input"]["image_features"]``)
    to the decoder, with dropout; the CNN itself runs offline (preprocess/extract_features.py)."""

    def __init__(self, feature_dim, dropout=0.0):
        super().__init__(dictionary=None)
        self.feature_dim = feature_dim
        self.dropout = nn.Dropout(dropout)

    def forward(self, src_tokens=None, src_lengths=None, image_features=None, **kwargs):
        if image_features is None:
            raise ValueError("the image captioning models need sample['net_input']['image_features'] "
                             "(use --task image_captioning)")
        if image_features.dim() != 2 or image_features.size(1) != self.feature_dim:
            raise ValueError(f"image features of shape {tuple(image_features.shape)} given to a model built "
                             f"for B x {self.feature_dim} features")
        return {"v": [self.dropout(image_features)]}  # the decoder casts v to its own dtype

    def reorder_encoder_out(self, encoder_out, new_order):
        return {"v": [encoder_out["v"][0].index_select(0, new_order)]}

    def max_positions(self):
        return int(1e6)


class SentenceLSTMEncoder(FairseqEncoder):
    """The LSTM encoder of the ATPL autoencoder (Sec. 5.1, Fig. 3): ``v`` is the final hidden
    state of the last layer (both directions concatenated when bidirectional), B x D."""

    def __init__(self, dictionary, embed_dim, hidden_size, num_layers=1, bidirectional=True, dropout=0.0,
                 left_pad=True):
        super().__init__(dictionary)
        self.padding_idx = dictionary.pad()
        self.left_pad = left_pad
        self.embed_tokens = nn.Embedding(len(dictionary), embed_dim, padding_idx=self.padding_idx)
        nn.init.normal_(self.embed_tokens.weight, 0, embed_dim ** -0.5)
        nn.init.constant_(self.embed_tokens.weight[self.padding_idx], 0)
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

    def reorder_encoder_out(self, encoder_out, new_order):
        return {"v": [encoder_out["v"][0].index_select(0, new_order)]}

    def max_positions(self):
        return int(1e6)


# --------------------------------------------------------------------------- decoder
class ATPLDecoder(FairseqIncrementalDecoder):
    """The ATPL decoder (module docstring); ``encoder_out["v"][0]`` is ``v`` (B x d_v)."""

    STATE_KEY = "atpl_state"

    def __init__(self, dictionary, v_dim, embed_dim, hidden_size, tpr_dim, num_layers=1, dropout=0.0,
                 share_filler_output_embed=False, max_target_positions=DEFAULT_MAX_TARGET_POSITIONS):
        super().__init__(dictionary)
        V, pad = len(dictionary), dictionary.pad()
        self.hidden_size, self.num_layers, self.d = hidden_size, num_layers, tpr_dim
        self.max_target_positions = max_target_positions
        self.embed_tokens = nn.Embedding(V, embed_dim, padding_idx=pad)  # E: LSTM input
        self.filler_embed = nn.Embedding(V, tpr_dim, padding_idx=pad)  # W_e: TPR fillers
        for emb in (self.embed_tokens, self.filler_embed):
            nn.init.normal_(emb.weight, 0, emb.embedding_dim ** -0.5)
            nn.init.constant_(emb.weight[pad], 0)
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

    def reorder_incremental_state(self, incremental_state, new_order):
        state = self.get_incremental_state(incremental_state, self.STATE_KEY)
        if state is None:
            return
        state = {"h": state["h"].index_select(1, new_order), "c": state["c"].index_select(1, new_order),
                 "S_tilde": state["S_tilde"].index_select(0, new_order), "u": state["u"].index_select(0, new_order)}
        self.set_incremental_state(incremental_state, self.STATE_KEY, state)

    # forward ----------------------------------------------------------------
    def forward(self, prev_output_tokens, encoder_out=None, incremental_state=None, features_only=False, **kwargs):
        x, extra = self.extract_features(prev_output_tokens, encoder_out, incremental_state)
        if not features_only:
            x = self.output_layer(x)
        return x, extra

    def extract_features(self, prev_output_tokens, encoder_out=None, incremental_state=None, **kwargs):
        """Returns fillers ``f_t`` (B x T x d) and ``{"attn": [None], "u": B x T x d}``."""
        # B x d_v; fairseq casts the model (--fp16, --bf16, .double()) but not the sample's features
        v = encoder_out["v"][0].to(self.filler_embed.weight.dtype)
        if incremental_state is not None:
            prev_output_tokens = prev_output_tokens[:, -1:]
        B = prev_output_tokens.size(0)
        state = None
        if incremental_state is not None:
            state = self.get_incremental_state(incremental_state, self.STATE_KEY)
        if state is None:
            state = self._initial_state(B, v)
        tokens = prev_output_tokens.t()  # T x B
        x = self.dropout(self.embed_tokens(tokens))  # T x B x C
        H, (h, c) = self.lstm(x, (state["h"], state["c"]))  # T x B x hidden
        E = self.filler_embed(tokens)  # T x B x d
        Fs, Us, S_tilde, u_last = self.cell.forward_sequence(v, H, E, state["S_tilde"], state["u"])
        if incremental_state is not None:
            self.set_incremental_state(incremental_state, self.STATE_KEY,
                                       {"h": h, "c": c, "S_tilde": S_tilde, "u": u_last})
        f = self.dropout(Fs).transpose(0, 1)  # B x T x d
        return f, {"attn": [None], "u": Us.transpose(0, 1)}

    def output_layer(self, features, **kwargs):
        if self.share_filler_output_embed:
            return F.linear(features, self.filler_embed.weight)  # W_e^T f_t
        return self.output_projection(features)

    def max_positions(self):
        return self.max_target_positions


# --------------------------------------------------------------------------- models
def _add_decoder_args(parser):
    parser.add_argument("--decoder-embed-dim", type=int, metavar="N", help="LSTM input embedding size (E)")
    parser.add_argument("--decoder-hidden-size", type=int, metavar="N", help="LSTM hidden size (paper: 512)")
    parser.add_argument("--decoder-layers", type=int, metavar="N", help="LSTM layers")
    parser.add_argument("--tpr-dim", type=int, metavar="N", help="TPR size d, a power of two (paper: 32)")
    parser.add_argument("--dropout", type=float, metavar="D", help="dropout on embeddings, image feature and f_t")
    parser.add_argument("--share-filler-output-embed", action="store_true",
                        help="logits = W_e^T f_t (the filler embedding of the TPR) instead of a separate linear layer")


def _check_tpr_dim(args):
    try:
        hadamard_matrix(args.tpr_dim)
    except ValueError as err:
        raise ValueError(f"--tpr-dim {args.tpr_dim}: {err}") from None


def feature_dim_from_task(args, task):
    """The image-feature size: the task's feature file decides; a checkpoint or flag that
    disagrees is an error (not a shape error deep in the model)."""
    if not hasattr(task, "feature_dim"):
        raise ValueError(f"--arch {args.arch} decodes image features: use --task image_captioning")
    model_dim = getattr(args, "image_feature_dim", None)
    task_dim = task.feature_dim
    if task_dim is None:  # a checkpoint loaded from a directory without feature files
        if model_dim is None:
            raise ValueError(f"no S.feat.npy image-feature file in {task.cfg.data} and the checkpoint does not "
                             f"name its feature size (--image-feature-dim)")
        task.feature_dim = model_dim
        return model_dim
    if model_dim is not None and model_dim != task_dim:
        raise ValueError(f"the model was built for {model_dim}-d image features (--image-feature-dim) but "
                         f"the features in {task.cfg.data} are {task_dim}-d: use the feature file the model "
                         f"was trained with, or retrain")
    args.image_feature_dim = task_dim
    return task_dim


def default_length_limits(args, *keys):
    """``--max-source-positions`` / ``--max-target-positions`` are task options: fairseq-train's
    Namespace holds the task's values, and under Hydra :mod:`.hydra_args` takes them from ``task.*``.
    They are filled here, after that, and not by the presets (which run first under Hydra and would
    hide the task's values): 1024 when neither gives one."""
    for key in keys:
        if getattr(args, key, None) is None:
            setattr(args, key, DEFAULT_MAX_TARGET_POSITIONS)


def _build_atpl_decoder(args, tgt_dict, v_dim):
    _check_tpr_dim(args)
    return ATPLDecoder(
        tgt_dict, v_dim, args.decoder_embed_dim, args.decoder_hidden_size, args.tpr_dim,
        num_layers=args.decoder_layers, dropout=args.dropout,
        share_filler_output_embed=args.share_filler_output_embed,
        max_target_positions=args.max_target_positions,
    )


@register_model("atpl")
class ATPLModel(FairseqEncoderDecoderModel):
    """ATPL image captioner (Huang et al., Sec. 4, Fig. 2): image feature -> ATPL decoder."""

    @staticmethod
    def add_args(parser):
        _add_decoder_args(parser)
        parser.add_argument("--image-feature-dim", type=int, metavar="N",
                            help="size of the image features (set from the task's feature file)")

    from_pretrained = plugin_from_pretrained  # returns the fitting fairseq_tpr.hub interface

    @classmethod
    @accepts_hydra_config
    def build_model(cls, args, task):
        atpl_base(args)
        default_length_limits(args, "max_target_positions")
        dim = feature_dim_from_task(args, task)
        encoder = ImageFeatureEncoder(dim, dropout=args.dropout)
        decoder = _build_atpl_decoder(args, task.target_dictionary, dim)
        return cls(encoder, decoder)

    def max_positions(self):
        return self.decoder.max_positions()


@register_model("atpl_autoencoder")
class ATPLAutoencoderModel(FairseqEncoderDecoderModel):
    """ATPL sentence autoencoder (Huang et al., Sec. 5.1, Fig. 3): LSTM encoder -> v -> ATPL
    decoder rebuilding the sentence. Train it with ``--task translation`` on source = target;
    ``fairseq-tpr-unbinding`` reads the unbinding vectors u_t off its decoder."""

    @staticmethod
    def add_args(parser):
        _add_decoder_args(parser)
        parser.add_argument("--encoder-embed-dim", type=int, metavar="N")
        parser.add_argument("--encoder-hidden-size", type=int, metavar="N")
        parser.add_argument("--encoder-layers", type=int, metavar="N")
        parser.add_argument("--encoder-unidirectional", action="store_true",
                            help="a forward LSTM encoder (default: bidirectional, v = both final states)")

    @classmethod
    @accepts_hydra_config
    def build_model(cls, args, task):
        atpl_autoencoder_base(args)
        default_length_limits(args, "max_source_positions", "max_target_positions")
        if task.source_dictionary is None:
            raise ValueError("--arch atpl_autoencoder reads a sentence: use --task translation "
                             "with the same text as source and target")
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
    args.decoder_embed_dim = getattr(args, "decoder_embed_dim", 512)
    args.decoder_hidden_size = getattr(args, "decoder_hidden_size", 512)
    args.decoder_layers = getattr(args, "decoder_layers", 1)
    args.tpr_dim = getattr(args, "tpr_dim", 32)
    args.dropout = getattr(args, "dropout", 0.3)
    args.share_filler_output_embed = getattr(args, "share_filler_output_embed", False)


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
    args.decoder_embed_dim = getattr(args, "decoder_embed_dim", 16)
    args.decoder_hidden_size = getattr(args, "decoder_hidden_size", 32)
    args.tpr_dim = getattr(args, "tpr_dim", 8)
    args.dropout = getattr(args, "dropout", 0.0)
    atpl_base(args)


def atpl_autoencoder_base(args):
    args.encoder_embed_dim = getattr(args, "encoder_embed_dim", 256)
    args.encoder_hidden_size = getattr(args, "encoder_hidden_size", 512)
    args.encoder_layers = getattr(args, "encoder_layers", 1)
    args.encoder_unidirectional = getattr(args, "encoder_unidirectional", False)
    args.decoder_embed_dim = getattr(args, "decoder_embed_dim", 256)
    atpl_base(args)


@register_model_architecture("atpl_autoencoder", "atpl_autoencoder")
def atpl_autoencoder_arch(args):
    """Sec. 5.1: LSTM encoder, ATPL decoder with d = 32 and a 512-unit LSTM; encoder sizes are ours."""
    atpl_autoencoder_base(args)


@register_model_architecture("atpl_autoencoder", "atpl_autoencoder_tiny")
def atpl_autoencoder_tiny(args):
    """For tests and CPU demos: bidirectional LSTM encoder 32, ATPL d 8 with LSTM 32, dropout 0."""
    args.encoder_embed_dim = getattr(args, "encoder_embed_dim", 16)
    args.encoder_hidden_size = getattr(args, "encoder_hidden_size", 32)
    args.decoder_embed_dim = getattr(args, "decoder_embed_dim", 16)
    args.decoder_hidden_size = getattr(args, "decoder_hidden_size", 32)
    args.tpr_dim = getattr(args, "tpr_dim", 8)
    args.dropout = getattr(args, "dropout", 0.0)
    atpl_autoencoder_base(args)
