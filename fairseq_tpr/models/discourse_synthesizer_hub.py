"""The hub interface of the discourse-tree Synthesizer (``--task extractive_summarization``), the class
that ``DiscourseSynthesizerModel.from_pretrained`` and :func:`fairseq_tpr.hub.from_pretrained` return,
and :func:`select_units`, the choice of units that it and ``fairseq-tpr-extract`` make."""
from typing import List, Optional, Sequence, Union

import numpy as np
import torch
from torch import nn

from ..corpora.rst_trees import parse_tree
from ..data.extractive_dataset import ExtractiveDataset
from ..errors import ConfigError, InputError
from ..modules.tree_attention import RSTNode, right_branching_tree, tree_to_arrays, validate_tree


class ExtractiveHubInterface(nn.Module):
    """The discourse-tree Synthesizer (``--task extractive_summarization``) scores the units (EDUs
    or sentences) of a document; it generates nothing.

    A document is given as its unit vectors (U x D, from the encoder that built the training data:
    ``meta.json``'s ``encoder``, e.g. all-MiniLM-L6-v2 for ``preprocess/extractive.py --encoder
    minilm``) and its RST tree (``tree=``: text in any format of
    :mod:`fairseq_tpr.corpora.rst_trees`, or an ``RSTNode``). A document without a tree is a
    ConfigError unless ``right_branching=True`` asks for the right-branching tree (unit i the
    nucleus, the rest its satellite: the placeholder of ``preprocess/extractive.py
    --right-branching-trees``, not a discourse parse). ``score_units`` gives the logits,
    ``extract`` the chosen units and ``summarize`` their text, as fairseq-tpr-extract does."""

    def __init__(self, cfg, task, models):
        super().__init__()
        self.cfg, self.task = cfg, task
        self.models = nn.ModuleList(models)
        for model in self.models:
            model.eval()
        self.unit = task.meta.get("unit", "sentence")
        self.register_buffer("_float_tensor", torch.tensor([0], dtype=torch.float))

    @property
    def device(self):
        return self._float_tensor.device

    def _batch(self, unit_vectors, tree, right_branching=False):
        units = np.asarray(unit_vectors, dtype=np.float32)
        if units.ndim != 2 or units.shape[1] != self.task.unit_dim:
            raise InputError(f"the model takes U x {self.task.unit_dim} unit vectors ({self.task.meta.get('encoder')} "
                             f"encoder, meta.json); got shape {units.shape}")
        n = units.shape[0]
        if tree is not None and right_branching:
            raise ConfigError("give tree=... or right_branching=True, not both")
        if tree is None and not right_branching:
            raise ConfigError("no tree: pass tree=... (an RST tree of the document's units, e.g. from "
                              "preprocess/rst_parse.sh) or right_branching=True for the right-branching placeholder "
                              "(as preprocess/extractive.py --right-branching-trees)")
        if tree is None:
            tree = right_branching_tree(n)
        elif isinstance(tree, RSTNode):
            tree = validate_tree(tree, n)
        else:
            tree = parse_tree(str(tree), n)
        # the D-Tree parents as the training data's were converted (meta.json; older data: hirao)
        nodes, parents = tree_to_arrays(tree, self.task.meta.get("dependency_conversion", "hirao"))
        arrays = {"units": units, "labels": np.zeros(n, dtype=np.uint8), "parents": parents, "tree": nodes,
                  "index": np.array([[0, n, 0, len(nodes)]], dtype=np.int64)}
        dataset = ExtractiveDataset(arrays, shuffle=False)
        return dataset.collater([dataset[0]])

    @torch.no_grad()
    def score_units(self, unit_vectors, tree: Union[None, str, RSTNode] = None,
                    right_branching: bool = False) -> np.ndarray:
        """One logit per unit (U,), the mean over the loaded models (one model: its logits). ``tree``
        is the document's RST tree; without one, ``right_branching=True`` must ask for the
        right-branching placeholder (else a ConfigError)."""
        batch = self._batch(unit_vectors, tree, right_branching)
        net_input = {k: v.to(self.device) for k, v in batch["net_input"].items()}
        logits = torch.stack([model(**net_input)[0][0].float() for model in self.models]).mean(0)
        return logits.cpu().numpy()

    def extract(self, unit_vectors, k: Optional[int] = None, words: Optional[int] = None,
                texts: Optional[Sequence[str]] = None, tree: Union[None, str, RSTNode] = None,
                right_branching: bool = False) -> List[int]:
        """0-based indices, in document order, of the units fairseq-tpr-extract would choose: the
        ``k`` best (default 3 sentences / 6 EDUs), or with ``words`` (needs ``texts``) the best units
        as long as the summary stays within that many words."""
        if words is not None and texts is None:
            raise ConfigError("extract: a word budget needs the unit texts (texts=...)")
        scores = self.score_units(unit_vectors, tree, right_branching)
        if texts is not None and len(texts) != len(scores):
            raise InputError(f"extract: {len(texts)} texts for {len(scores)} unit vectors")
        k = k or (6 if self.unit == "edu" else 3)
        return select_units(scores, texts, k=k, words=words)

    def summarize(self, texts: Sequence[str], unit_vectors, k: Optional[int] = None, words: Optional[int] = None,
                  tree: Union[None, str, RSTNode] = None, right_branching: bool = False) -> str:
        """The chosen units' texts in document order, joined by a space (a line of fairseq-tpr-extract --out)."""
        chosen = self.extract(unit_vectors, k=k, words=words, texts=texts, tree=tree, right_branching=right_branching)
        return " ".join(texts[i].strip() for i in chosen)

    def translate(self, *args, **kwargs):
        raise TypeError("discourse_synthesizer is an extractive model: it scores the units of a document and "
                        "generates nothing; use score_units(vectors, tree), extract(vectors, tree=tree) or "
                        "summarize(texts, vectors, tree=tree)")

    sample = generate = translate


def select_units(scores, units, k=None, words=None):
    """Indices (document order) of the chosen units: the ``k`` best by score, or with ``words`` the
    units in score order as long as the summary stays within that many words (a unit that would
    pass the budget is skipped; the first unit is always kept)."""
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    if words is None:
        return sorted(order[:k])
    chosen, used = [], 0
    for i in order:
        n = len(units[i].split())
        if chosen and used + n > words:
            continue
        chosen.append(i)
        used += n
        if used >= words:
            break
    return sorted(chosen)
