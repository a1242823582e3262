"""What the image captioners (``atpl*``, ``nic*``) and the ATPL autoencoder share.

- :class:`VectorEncoder`: an encoder whose output is one vector ``v`` per example
  (``encoder_out["v"][0]``, ``B x D``), reordered along the batch; :class:`ImageFeatureEncoder`
  passes the precomputed image feature through (with dropout).
- :class:`RecurrentCaptionDecoder`: an incremental decoder whose recurrent state is one dict
  under ``STATE_KEY``, every entry reordered for beam search along its batch dimension
  (``STATE_BATCH_DIMS``); ``forward`` = ``extract_features`` + ``output_layer``.
- :class:`ImageCaptioningModel`: image feature -> decoder, with the feature size taken from the
  task (:func:`feature_dim_from_task`), the length limit from the task or 1024
  (:func:`default_length_limits`), the family's base preset applied under Hydra as under
  fairseq-train, and ``from_pretrained`` returning the captioning hub interface.
"""
from typing import Dict

import torch.nn as nn
from fairseq.models import FairseqEncoder, FairseqEncoderDecoderModel, FairseqIncrementalDecoder

from ..errors import ConfigError, InputError
from .checks import ChecksOptions
from .captioning_hub import CaptionerHubInterface
from .hub_entry import plugin_from_pretrained
from .scripting import EagerOnly

DEFAULT_MAX_TARGET_POSITIONS = 1024


def init_embedding(emb: nn.Embedding) -> nn.Embedding:
    """The captioners' embedding initialisation: N(0, 1/dim), zero padding row."""
    nn.init.normal_(emb.weight, 0, emb.embedding_dim ** -0.5)
    nn.init.constant_(emb.weight[emb.padding_idx], 0)
    return emb


# --------------------------------------------------------------------------- encoders
class VectorEncoder(FairseqEncoder):
    """An encoder whose output is ``{"v": [B x D]}``."""

    def reorder_encoder_out(self, encoder_out, new_order):
        return {"v": [encoder_out["v"][0].index_select(0, new_order)]}

    def max_positions(self):
        return int(1e6)


class ImageFeatureEncoder(VectorEncoder):
    """Passes the precomputed image feature ``v`` (B x D, from ``sample["net_input"]["image_features"]``)
    to the decoder, with dropout; the CNN itself runs offline (preprocess/extract_features.py)."""

    def __init__(self, feature_dim, dropout=0.0):
        super().__init__(dictionary=None)
        self.feature_dim = feature_dim
        self.dropout = nn.Dropout(dropout)

    def forward(self, src_tokens=None, src_lengths=None, image_features=None, **kwargs):
        if image_features is None:
            raise ConfigError("the image captioning models need sample['net_input']['image_features'] "
                              "(use --task image_captioning)")
        if image_features.dim() != 2 or image_features.size(1) != self.feature_dim:
            raise InputError(f"image features of shape {tuple(image_features.shape)} given to a model built "
                             f"for B x {self.feature_dim} features")
        return {"v": [self.dropout(image_features)]}  # the decoder casts v to its own dtype


# --------------------------------------------------------------------------- decoder
class RecurrentCaptionDecoder(FairseqIncrementalDecoder):
    """Base of the LSTM decoders: subclasses set ``STATE_KEY`` and ``STATE_BATCH_DIMS`` and write
    ``extract_features`` (and ``output_layer`` if not ``self.output_projection``)."""

    STATE_KEY = "state"
    STATE_BATCH_DIMS: Dict[str, int] = {}  # cached tensor -> its batch dimension

    def __init__(self, dictionary, max_target_positions=DEFAULT_MAX_TARGET_POSITIONS):
        super().__init__(dictionary)
        self.max_target_positions = max_target_positions

    def image_feature(self, encoder_out):
        """``v`` (B x D) in the decoder's dtype: fairseq casts the model (--fp16, --bf16, .double())
        but not the sample's features."""
        return encoder_out["v"][0].to(self.embed_tokens.weight.dtype)

    def resume(self, prev_output_tokens, incremental_state):
        """(the tokens this call reads, the cached state or None): incremental decoding reads only
        the last token and continues from the state :meth:`keep` stored."""
        if incremental_state is None:
            return prev_output_tokens, None
        return prev_output_tokens[:, -1:], self.get_incremental_state(incremental_state, self.STATE_KEY)

    def keep(self, incremental_state, state: Dict):
        if incremental_state is not None:
            self.set_incremental_state(incremental_state, self.STATE_KEY, state)

    def reorder_incremental_state(self, incremental_state, new_order):
        state = self.get_incremental_state(incremental_state, self.STATE_KEY)
        if state is None:
            return
        self.set_incremental_state(incremental_state, self.STATE_KEY, {
            key: state[key].index_select(dim, new_order) for key, dim in self.STATE_BATCH_DIMS.items()
        })

    def forward(self, prev_output_tokens, encoder_out=None, incremental_state=None, features_only=False, **kwargs):
        x, extra = self.extract_features(prev_output_tokens, encoder_out, incremental_state)
        if not features_only:
            x = self.output_layer(x)
        return x, extra

    def output_layer(self, features, **kwargs):
        return self.output_projection(features)

    def max_positions(self):
        return self.max_target_positions


# --------------------------------------------------------------------------- model
def feature_dim_from_task(args, task):
    """The image-feature size: the task's feature file decides; a checkpoint or flag that
    disagrees is an error (not a shape error deep in the model)."""
    if not hasattr(task, "feature_dim"):
        raise ConfigError(f"--arch {args.arch} decodes image features: use --task image_captioning")
    model_dim = getattr(args, "image_feature_dim", None)
    task_dim = task.feature_dim
    if task_dim is None:  # a checkpoint loaded from a directory without feature files
        if model_dim is None:
            raise InputError(f"no S.feat.npy image-feature file in {task.cfg.data} and the checkpoint does not "
                             f"name its feature size (--image-feature-dim): extract the image features with "
                             f"preprocess/extract_features.py")
        task.feature_dim = model_dim
        return model_dim
    if model_dim is not None and model_dim != task_dim:
        raise ConfigError(f"the model was built for {model_dim}-d image features (--image-feature-dim) but "
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


class ImageCaptioningModel(EagerOnly, ChecksOptions, FairseqEncoderDecoderModel):
    """Image feature -> caption decoder. Subclasses write :meth:`base_preset` (the defaults every
    preset of the family shares) and :meth:`build_caption_decoder`; ``image_dropout`` says whether
    ``--dropout`` also applies to the image feature."""
    not_scriptable_because = ("its forward is fairseq's FairseqEncoderDecoderModel.forward(..., **kwargs), which "
                              "TorchScript does not compile")

    image_dropout = True

    @classmethod
    def add_args(cls, parser):
        parser.add_argument("--image-feature-dim", type=int, metavar="N",
                            help="size of the image features (set from the task's feature file)")

    from_pretrained = plugin_from_pretrained  # returns hub_interface
    hub_interface = CaptionerHubInterface

    @staticmethod
    def base_preset(args):
        raise NotImplementedError

    @classmethod
    def build_caption_decoder(cls, args, dictionary, v_dim) -> RecurrentCaptionDecoder:
        raise NotImplementedError

    @classmethod
    def build_checked_model(cls, args, task):
        cls.base_preset(args)
        default_length_limits(args, "max_target_positions")
        dim = feature_dim_from_task(args, task)
        encoder = ImageFeatureEncoder(dim, dropout=args.dropout if cls.image_dropout else 0.0)
        return cls(encoder, cls.build_caption_decoder(args, task.target_dictionary, dim))

    def max_positions(self):
        return self.decoder.max_positions()
