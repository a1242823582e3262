"""Show-and-Tell CNN-LSTM captioner (Vinyals et al. 2015), the baseline of ATPL's Table 1: ``--arch nic*``.

The image feature ``v`` is mapped to the word-embedding space, ``x_{-1} = W_I v``, and fed to
the LSTM once, before the begin symbol; then the LSTM reads the previous word's embedding
at every step and ``p(x_t) = softmax(W_o h_t + b_o)``:

    h_{-1}, c_{-1} = LSTM(W_I v, 0, 0)
    h_t, c_t       = LSTM(E x_{t-1}, h_{t-1}, c_{t-1})     (x_0 = fairseq's </s> begin symbol)

Incremental decoding keeps ``h, c`` (layers x B x H) under this decoder's key; the first
step runs the image step as well. ``reorder_incremental_state`` reorders both.
"""
import torch.nn as nn
from fairseq.models import FairseqEncoderDecoderModel, FairseqIncrementalDecoder, register_model, register_model_architecture

from .atpl import DEFAULT_MAX_TARGET_POSITIONS, ImageFeatureEncoder, default_length_limits, feature_dim_from_task
from .hydra_args import accepts_hydra_config
from .hub_entry import plugin_from_pretrained


class NICDecoder(FairseqIncrementalDecoder):
    """Show-and-Tell LSTM decoder (module docstring); ``encoder_out["v"][0]`` is the image feature, B x D."""

    STATE_KEY = "nic_state"

    def __init__(self, dictionary, v_dim, embed_dim, hidden_size, num_layers=1, dropout=0.0,
                 max_target_positions=DEFAULT_MAX_TARGET_POSITIONS):
        super().__init__(dictionary)
        pad = dictionary.pad()
        self.max_target_positions = max_target_positions
        self.image_proj = nn.Linear(v_dim, embed_dim)  # W_I
        self.embed_tokens = nn.Embedding(len(dictionary), embed_dim, padding_idx=pad)
        nn.init.normal_(self.embed_tokens.weight, 0, embed_dim ** -0.5)
        nn.init.constant_(self.embed_tokens.weight[pad], 0)
        self.lstm = nn.LSTM(embed_dim, hidden_size, num_layers=num_layers)
        self.dropout = nn.Dropout(dropout)
        self.output_projection = nn.Linear(hidden_size, len(dictionary))

    def _image_step(self, v):
        v = v.to(self.image_proj.weight.dtype)  # fairseq casts the model (--fp16, --bf16), not the sample
        x = self.dropout(self.image_proj(v)).unsqueeze(0)  # 1 x B x C
        _, state = self.lstm(x)
        return state

    def reorder_incremental_state(self, incremental_state, new_order):
        state = self.get_incremental_state(incremental_state, self.STATE_KEY)
        if state is None:
            return
        self.set_incremental_state(incremental_state, self.STATE_KEY,
                                   {"h": state["h"].index_select(1, new_order),
                                    "c": state["c"].index_select(1, new_order)})

    def forward(self, prev_output_tokens, encoder_out=None, incremental_state=None, features_only=False, **kwargs):
        x, extra = self.extract_features(prev_output_tokens, encoder_out, incremental_state)
        if not features_only:
            x = self.output_layer(x)
        return x, extra

    def extract_features(self, prev_output_tokens, encoder_out=None, incremental_state=None, **kwargs):
        v = encoder_out["v"][0]  # B x D
        state = None
        if incremental_state is not None:
            prev_output_tokens = prev_output_tokens[:, -1:]
            state = self.get_incremental_state(incremental_state, self.STATE_KEY)
        h0c0 = (state["h"], state["c"]) if state is not None else self._image_step(v)
        x = self.dropout(self.embed_tokens(prev_output_tokens.t()))  # T x B x C
        H, (h, c) = self.lstm(x, h0c0)  # T x B x hidden
        if incremental_state is not None:
            self.set_incremental_state(incremental_state, self.STATE_KEY, {"h": h, "c": c})
        return self.dropout(H).transpose(0, 1), {"attn": [None]}  # B x T x hidden

    def output_layer(self, features, **kwargs):
        return self.output_projection(features)

    def max_positions(self):
        return self.max_target_positions


@register_model("nic")
class NICModel(FairseqEncoderDecoderModel):
    """Show and Tell (Vinyals et al. 2015) on precomputed image features."""

    @staticmethod
    def add_args(parser):
        parser.add_argument("--decoder-embed-dim", type=int, metavar="N", help="word and image embedding size")
        parser.add_argument("--decoder-hidden-size", type=int, metavar="N", help="LSTM hidden size")
        parser.add_argument("--decoder-layers", type=int, metavar="N", help="LSTM layers")
        parser.add_argument("--dropout", type=float, metavar="D", help="dropout on embeddings and LSTM output")
        parser.add_argument("--image-feature-dim", type=int, metavar="N",
                            help="size of the image features (set from the task's feature file)")

    from_pretrained = plugin_from_pretrained  # returns the fitting fairseq_tpr.hub interface

    @classmethod
    @accepts_hydra_config
    def build_model(cls, args, task):
        nic_base(args)
        default_length_limits(args, "max_target_positions")
        dim = feature_dim_from_task(args, task)
        encoder = ImageFeatureEncoder(dim, dropout=0.0)
        decoder = NICDecoder(task.target_dictionary, dim, args.decoder_embed_dim, args.decoder_hidden_size,
                             num_layers=args.decoder_layers, dropout=args.dropout,
                             max_target_positions=args.max_target_positions)
        return cls(encoder, decoder)

    def max_positions(self):
        return self.decoder.max_positions()


def nic_base(args):
    """Show and Tell sizes (Vinyals et al. 2015, Sec. 4.3: 512-d embeddings and LSTM), dropout 0.3."""
    args.decoder_embed_dim = getattr(args, "decoder_embed_dim", 512)
    args.decoder_hidden_size = getattr(args, "decoder_hidden_size", 512)
    args.decoder_layers = getattr(args, "decoder_layers", 1)
    args.dropout = getattr(args, "dropout", 0.3)


@register_model_architecture("nic", "nic")
def nic_arch(args):
    nic_base(args)


@register_model_architecture("nic", "nic_tiny")
def nic_tiny(args):
    """For tests and CPU demos: embeddings 16, LSTM 32, dropout 0."""
    args.decoder_embed_dim = getattr(args, "decoder_embed_dim", 16)
    args.decoder_hidden_size = getattr(args, "decoder_hidden_size", 32)
    args.dropout = getattr(args, "dropout", 0.0)
    nic_base(args)
