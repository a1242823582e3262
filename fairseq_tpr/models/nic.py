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
from fairseq.models import register_model, register_model_architecture

from .captioning_base import DEFAULT_MAX_TARGET_POSITIONS, ImageCaptioningModel, RecurrentCaptionDecoder, init_embedding
from .presets import set_defaults


class NICDecoder(RecurrentCaptionDecoder):
    """Show-and-Tell LSTM decoder (module docstring); ``encoder_out["v"][0]`` is the image feature, B x D."""

    STATE_KEY = "nic_state"
    STATE_BATCH_DIMS = {"h": 1, "c": 1}

    def __init__(self, dictionary, v_dim, embed_dim, hidden_size, num_layers=1, dropout=0.0,
                 max_target_positions=DEFAULT_MAX_TARGET_POSITIONS):
        super().__init__(dictionary, max_target_positions)
        pad = dictionary.pad()
        self.image_proj = nn.Linear(v_dim, embed_dim)  # W_I
        self.embed_tokens = init_embedding(nn.Embedding(len(dictionary), embed_dim, padding_idx=pad))
        self.lstm = nn.LSTM(embed_dim, hidden_size, num_layers=num_layers)
        self.dropout = nn.Dropout(dropout)
        self.output_projection = nn.Linear(hidden_size, len(dictionary))

    def _image_step(self, v):
        x = self.dropout(self.image_proj(v)).unsqueeze(0)  # 1 x B x C
        _, state = self.lstm(x)
        return state

    def extract_features(self, prev_output_tokens, encoder_out=None, incremental_state=None, **kwargs):
        prev_output_tokens, state = self.resume(prev_output_tokens, incremental_state)
        h0c0 = (state["h"], state["c"]) if state is not None else self._image_step(self.image_feature(encoder_out))
        x = self.dropout(self.embed_tokens(prev_output_tokens.t()))  # T x B x C
        H, (h, c) = self.lstm(x, h0c0)  # T x B x hidden
        self.keep(incremental_state, {"h": h, "c": c})
        return self.dropout(H).transpose(0, 1), {"attn": [None]}  # B x T x hidden


@register_model("nic")
class NICModel(ImageCaptioningModel):
    """Show and Tell (Vinyals et al. 2015) on precomputed image features."""

    image_dropout = False  # --dropout acts on W_I v, the embeddings and the LSTM output

    @classmethod
    def add_args(cls, parser):
        parser.add_argument("--decoder-embed-dim", type=int, metavar="N", help="word and image embedding size")
        parser.add_argument("--decoder-hidden-size", type=int, metavar="N", help="LSTM hidden size")
        parser.add_argument("--decoder-layers", type=int, metavar="N", help="LSTM layers")
        parser.add_argument("--dropout", type=float, metavar="D", help="dropout on embeddings and LSTM output")
        super().add_args(parser)  # --image-feature-dim

    @staticmethod
    def base_preset(args):
        nic_base(args)

    @classmethod
    def build_caption_decoder(cls, args, dictionary, v_dim):
        return NICDecoder(dictionary, v_dim, args.decoder_embed_dim, args.decoder_hidden_size,
                          num_layers=args.decoder_layers, dropout=args.dropout,
                          max_target_positions=args.max_target_positions)


def nic_base(args):
    """Show and Tell sizes (Vinyals et al. 2015, Sec. 4.3: 512-d embeddings and LSTM), dropout 0.3."""
    set_defaults(args, decoder_embed_dim=512, decoder_hidden_size=512, decoder_layers=1, dropout=0.3)


@register_model_architecture("nic", "nic")
def nic_arch(args):
    nic_base(args)


@register_model_architecture("nic", "nic_tiny")
def nic_tiny(args):
    """For tests and CPU demos: embeddings 16, LSTM 32, dropout 0."""
    set_defaults(args, decoder_embed_dim=16, decoder_hidden_size=32, dropout=0.0)
    nic_base(args)
