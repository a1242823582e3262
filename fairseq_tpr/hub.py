"""Python hub interfaces: ``from_pretrained`` for every model family of the plugin.

:func:`from_pretrained` loads a checkpoint with fairseq's hub loader (``fairseq.hub_utils``: the
same loading as fairseq-generate, ``arg_overrides`` from the keyword arguments) and wraps it in
the interface that fits its model; every model class's ``from_pretrained`` returns the same.

==========================================  ======================================================
model (``--arch``)                           interface and its methods
==========================================  ======================================================
``tp_transformer*``, ``tp_transformer_d*``,   fairseq's ``GeneratorHubInterface``:
``transformer_tp_*``, ``atpl_autoencoder*``   ``translate(sentence)`` (as fairseq-interactive)
``sttr*``                                     :class:`TemplateSummarizerHubInterface`:
                                              ``summarize(document, template)``,
                                              ``translate("document<TAB>template")``
``atpl*``, ``nic*``                           :class:`CaptionerHubInterface`: ``caption(features)``
``discourse_synthesizer*``                    :class:`ExtractiveHubInterface`: ``score_units``,
                                              ``extract``, ``summarize``
==========================================  ======================================================

Each method builds its batch the way the matching command line tool does (fairseq-interactive,
fairseq-generate, fairseq-tpr-extract), so both give the same output for the same input.
"""
import copy
from typing import Dict, List, Optional, Sequence, Union

import numpy as np
import torch
from fairseq import hub_utils
from fairseq.hub_utils import GeneratorHubInterface
from omegaconf import open_dict
from torch import nn

from .data.captioning import feature_net_input
from .errors import ConfigError, InputError
from .data.extractive_dataset import ExtractiveDataset
from .models.atpl import ATPLModel
from .models.discourse_synthesizer import DiscourseSynthesizerModel
from .models.nic import NICModel
from .models.sttr import STTRModel
from .corpora.rst_trees import parse_tree
from .modules.tree_attention import RSTNode, right_branching_tree, tree_to_arrays, validate_tree


class TemplateSummarizerHubInterface(GeneratorHubInterface):
    """STTR (``--task template_summarization``): every input is a document with its template.

    ``summarize(document, template)`` (or lists of both) and ``translate("document<TAB>template")``
    give fairseq-interactive's hypotheses: each half goes through the checkpoint's tokenizer and BPE
    separately and is encoded with the source dictionary, the template cut to
    ``--max-template-positions`` (the task's ``get_interactive_tokens_and_lengths``)."""

    def summarize(self, documents: Union[str, Sequence[str]], templates: Union[str, Sequence[str]],
                  beam: int = 5, verbose: bool = False, **kwargs) -> Union[str, List[str]]:
        """Summaries of ``documents`` written along ``templates`` (one template per document; a
        string for one document, lists for several). ``kwargs`` are generation options
        (``max_len_b``, ``lenpen``, ...)."""
        single = isinstance(documents, str)
        if single != isinstance(templates, str):
            raise TypeError("summarize: give one document and one template (two strings), or two lists")
        docs, tpls = ([documents], [templates]) if single else (list(documents), list(templates))
        if len(docs) != len(tpls):
            raise ValueError(f"summarize: {len(docs)} documents but {len(tpls)} templates (one template each)")
        for what, texts in (("document", docs), ("template", tpls)):
            for i, text in enumerate(texts):
                if "\t" in text:
                    raise ValueError(f"summarize: {what} {i + 1} contains a tab, which separates document and "
                                     f"template; replace it with a space")
        out = self.sample([f"{d}\t{t}" for d, t in zip(docs, tpls)], beam=beam, verbose=verbose, **kwargs)
        return out[0] if single else out

    def encode(self, sentence: str) -> torch.LongTensor:
        """``document<TAB>template`` -> ``document </s> template </s>`` (the row the task splits
        again before the model sees it)."""
        tokens, _ = self.task.get_interactive_tokens_and_lengths(
            [sentence], lambda text: self.apply_bpe(self.tokenize(text)))
        return tokens[0]


class CaptionerHubInterface(GeneratorHubInterface):
    """ATPL and Show-and-Tell (``--task image_captioning``): captions of precomputed image features.

    ``caption(features)`` takes one feature vector (D) or a batch (B x D), extracted as for
    training (e.g. ResNet-152 pool5 by ``preprocess/extract_features.py``), and gives
    fairseq-generate's hypotheses for the same features. The checkpoint directory needs only
    ``dict.txt`` (pass the data directory as ``data_name_or_path`` otherwise)."""

    def caption(self, features, beam: int = 5, batch_size: int = 64, **kwargs) -> Union[str, List[str]]:
        """Best caption per image: a string for a D-vector, a list for B x D. ``kwargs`` are
        generation options (``max_len_b``, ``lenpen``, ``no_repeat_ngram_size``, ...)."""
        feats = torch.as_tensor(np.asarray(features, dtype=np.float32))
        single = feats.dim() == 1
        hypos = self.generate_from_features(feats.unsqueeze(0) if single else feats, beam=beam,
                                            batch_size=batch_size, **kwargs)
        captions = [self.decode(h[0]["tokens"]) for h in hypos]
        return captions[0] if single else captions

    def generate_from_features(self, features: torch.Tensor, beam: int = 5, batch_size: int = 64,
                               **kwargs) -> List[List[Dict[str, torch.Tensor]]]:
        """fairseq's hypotheses (``tokens``, ``score``, ``positional_scores``, ...) per image of
        ``features`` (B x D), best first."""
        dim = self.models[0].encoder.feature_dim
        if features.dim() != 2 or features.size(1) != dim:
            raise ValueError(f"caption: the model takes {dim}-d image features (one vector, or B x {dim}); got "
                             f"shape {tuple(features.shape)}")
        gen_args = copy.deepcopy(self.cfg.generation)
        with open_dict(gen_args):
            gen_args.beam = beam
            for key, value in kwargs.items():
                setattr(gen_args, key, value)
        generator = self.task.build_generator(self.models, gen_args)
        eos = self.tgt_dict.eos()
        out = []
        for start in range(0, features.size(0), batch_size):
            chunk = features[start:start + batch_size].to(self.device)
            sample = {"id": torch.arange(start, start + chunk.size(0)), "net_input": feature_net_input(chunk, eos)}
            out.extend(self.task.inference_step(generator, self.models, sample))
        return out

    def sample(self, sentences, *args, **kwargs):
        raise TypeError("this is an image captioning model: it reads image features, not text; use "
                        "caption(features) with a D-vector or a B x D array of image features")

    def score(self, sentences, *args, **kwargs):
        return self.sample(sentences)


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
        from .models.discourse_synthesizer import select_units as select

        if words is not None and texts is None:
            raise ConfigError("extract: a word budget needs the unit texts (texts=...)")
        scores = self.score_units(unit_vectors, tree, right_branching)
        if texts is not None and len(texts) != len(scores):
            raise InputError(f"extract: {len(texts)} texts for {len(scores)} unit vectors")
        k = k or (6 if self.unit == "edu" else 3)
        return select(scores, texts, k=k, words=words)

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


def interface_for(model) -> type:
    """The hub interface class of a loaded model (module docstring)."""
    if isinstance(model, STTRModel):
        return TemplateSummarizerHubInterface
    if isinstance(model, (ATPLModel, NICModel)):
        return CaptionerHubInterface
    if isinstance(model, DiscourseSynthesizerModel):
        return ExtractiveHubInterface
    return GeneratorHubInterface


def from_pretrained(model_name_or_path: str, checkpoint_file: str = "model.pt", data_name_or_path: str = ".",
                    **kwargs):
    """Load ``model_name_or_path/checkpoint_file`` (``os.pathsep``-separated files: an ensemble) with
    the dictionaries of ``data_name_or_path`` (relative to the model directory when it starts with
    ``.``), and wrap it in the interface of its model (module docstring). ``kwargs`` override the
    checkpoint's settings as fairseq's ``from_pretrained`` does (e.g. ``bpe="sentencepiece"``,
    ``sentencepiece_model=...``, ``tokenizer="moses"``)."""
    loaded = hub_utils.from_pretrained(model_name_or_path, checkpoint_file, data_name_or_path, **kwargs)
    models = loaded["models"]
    kinds = {interface_for(m) for m in models}
    if len(kinds) > 1:
        raise ValueError(f"from_pretrained: the checkpoints {checkpoint_file!r} hold models of different kinds")
    return kinds.pop()(loaded["args"], loaded["task"], models)
