"""Task ``image_captioning``: precomputed image features -> captions (Huang et al., ATPL Sec. 4).

Data directory (see :mod:`fairseq_tpr.data.captioning`): ``dict.txt``; per split
``S.bin/.idx`` (binarized captions), ``S.img`` (image id per caption), ``S.feat.npy`` (N x D
float32, memory-mapped) and ``S.feat.ids``. A split whose name starts with ``train`` pairs every
reference with its image; every other split has one item per image,
whose target is the image's first reference (validation loss uses it; the caption scorer
uses all references). The image feature travels as ``sample["net_input"]["image_features"]``
(B x D).
"""
import os
from dataclasses import dataclass, field
from pathlib import Path

from fairseq.data import Dictionary, data_utils
from fairseq.dataclass import FairseqDataclass
from fairseq.tasks import FairseqTask, register_task

from ..data.captioning import CaptioningDataset, caption_rows, feature_dim, load_features
from ..errors import InputError


@dataclass
class ImageCaptioningConfig(FairseqDataclass):
    data: str = field(default="", metadata={"help": "captioning data directory (dict.txt, S.bin/.idx, S.img, "
                                                    "S.feat.npy, S.feat.ids)"})
    max_target_positions: int = field(default=1024, metadata={"help": "longest caption in tokens"})


@register_task("image_captioning", dataclass=ImageCaptioningConfig)
class ImageCaptioningTask(FairseqTask):
    """Image features in, captions out (module docstring).

    Checks, each an :class:`~fairseq_tpr.errors.InputError` naming the file and the numbers
    (the files themselves are checked by :mod:`fairseq_tpr.data.captioning`): ``dict.txt`` and at
    least one ``S.feat.npy`` exist; every split's features have the size D of the first split's
    (or of the checkpoint's model); ``S.bin/.idx`` exist and ``S.img`` has one line per caption.
    A model whose ``--image-feature-dim`` differs from D is refused when it is built
    (:func:`fairseq_tpr.models.captioning_base.feature_dim_from_task`).
    """

    def __init__(self, cfg, dictionary, feature_dim_, feature_source=None):
        super().__init__(cfg)
        self.dictionary = dictionary
        self.feature_dim = feature_dim_
        self.feature_source = feature_source  # the S.feat.npy that gave feature_dim (None: the checkpoint)

    @classmethod
    def setup_task(cls, cfg, **kwargs):
        dict_path = os.path.join(cfg.data, "dict.txt")
        if not os.path.exists(dict_path):
            raise InputError(f"{dict_path} is missing: binarize the captions first "
                             f"(preprocess/captions.sh RAW_DIR {cfg.data})")
        dictionary = Dictionary.load(dict_path)
        splits = sorted(p.name[: -len(".feat.npy")] for p in Path(cfg.data).glob("*.feat.npy"))
        dim, source = feature_dim(cfg.data, ["train", "valid", "test"] + splits)
        if dim is None and not kwargs.get("from_checkpoint"):
            raise InputError(f"no S.feat.npy image-feature file in {cfg.data}: every split S needs "
                             f"S.feat.npy (N x D float32) and S.feat.ids (preprocess/captions.sh)")
        # loading a checkpoint (fairseq-generate, from_pretrained) from a directory with dict.txt only:
        # the feature size is then the model's (--image-feature-dim, saved in the checkpoint)
        return cls(cfg, dictionary, dim, source)

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        feats, _, id2row = load_features(self.cfg.data, split)
        feat_path = Path(self.cfg.data) / f"{split}.feat.npy"
        if self.feature_dim is None:  # a checkpoint loaded from a directory without feature files
            self.feature_dim, self.feature_source = feats.shape[1], feat_path
        if feats.shape[1] != self.feature_dim:
            source = self.feature_source or "the checkpoint (--image-feature-dim)"
            raise InputError(f"{feat_path} has {feats.shape[1]}-d features but {source} has "
                             f"{self.feature_dim}-d features (the size the model takes): extract all splits "
                             f"with the same CNN layer")
        captions = data_utils.load_indexed_dataset(f"{self.cfg.data}/{split}", self.dictionary)
        if captions is None:
            raise InputError(f"{self.cfg.data}/{split}.bin/.idx missing: binarize {split}.txt "
                             f"(preprocess/captions.sh)")
        rows = caption_rows(self.cfg.data, split, id2row, len(captions))
        is_train = split.startswith("train")
        self.datasets[split] = CaptioningDataset(captions, rows, feats, self.dictionary,
                                                 one_per_image=not is_train, shuffle=is_train, split=split)

    def max_positions(self):
        return self.cfg.max_target_positions

    @property
    def source_dictionary(self):
        return None

    @property
    def target_dictionary(self):
        return self.dictionary
