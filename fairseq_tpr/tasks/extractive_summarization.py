"""Task ``extractive_summarization``: score the units (EDUs or sentences) of a document for an
extractive summary (Xiao, Huber & Carenini, slides "Extractive Summarization Model").

Data directory: see :mod:`fairseq_tpr.data.extractive_dataset` (built by ``preprocess/extractive.py``).
Documents are batched by unit count (``--max-tokens`` counts units); every document must have at
most ``--max-units`` units (checked at load, with a message that says how to fix it); the model's
random/dense attention is sized by the same number.

Loading a split (``fairseq-train``, ``fairseq-tpr-extract``) checks its files with
:func:`~fairseq_tpr.data.extractive_dataset.load_split`: a missing file (``S.tree.npy``
included: there is no default tree), arrays that do not fit each other or ``meta.json``'s
``unit_dim``, and every node of every tree are an :class:`~fairseq_tpr.errors.InputError` naming
the split, the document and the node.
"""
from dataclasses import dataclass, field

from fairseq.dataclass import FairseqDataclass
from fairseq.tasks import FairseqTask, register_task

from ..data.extractive_dataset import ExtractiveDataset, load_split, read_meta
from ..errors import InputError


@dataclass
class ExtractiveSummarizationConfig(FairseqDataclass):
    data: str = field(default="", metadata={"help": "extractive data directory (preprocess/extractive.py)"})
    max_units: int = field(default=512, metadata={"help": "most units in a document; sizes the random and dense "
                                                          "attentions (their l; 512 as the authors' code)"})


@register_task("extractive_summarization", dataclass=ExtractiveSummarizationConfig)
class ExtractiveSummarizationTask(FairseqTask):
    """Unit embeddings + RST tree in, one logit per unit out (module docstring)."""

    def __init__(self, cfg, meta):
        super().__init__(cfg)
        self.meta = meta
        self.unit_dim = int(meta["unit_dim"])

    @classmethod
    def setup_task(cls, cfg, **kwargs):
        return cls(cfg, read_meta(cfg.data))

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        arrays = load_split(self.cfg.data, split, max_units=self.cfg.max_units)
        if arrays["units"].shape[1] != self.unit_dim:
            raise InputError(f"{self.cfg.data}/{split}.units.npy has {arrays['units'].shape[1]}-d embeddings but "
                             f"meta.json says {self.unit_dim}: encode every split with the same encoder")
        self.datasets[split] = ExtractiveDataset(arrays, shuffle=split.startswith("train"))

    def label_counts(self, split="train"):
        """``(negative, positive)`` oracle labels over the units of ``split`` (``SPLIT.labels.npy``)."""
        import numpy as np

        path = f"{self.cfg.data}/{split}.labels.npy"
        try:
            labels = np.load(path, mmap_mode="r")
        except FileNotFoundError:
            raise InputError(f"{path}: no such file; --pos-weight auto counts the {split} labels: preprocess that "
                             "split (preprocess/extractive.py) or pass a number, e.g. --pos-weight 2") from None
        positives = int(np.count_nonzero(labels))
        return int(labels.shape[0]) - positives, positives

    def max_positions(self):
        return self.cfg.max_units

    @property
    def source_dictionary(self):
        return None

    @property
    def target_dictionary(self):
        return None
