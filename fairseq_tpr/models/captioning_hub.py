"""The hub interface of the captioners (ATPL and Show-and-Tell, ``--task image_captioning``), the
class that their ``from_pretrained`` and :func:`fairseq_tpr.hub.from_pretrained` return."""
import copy
from typing import Dict, List, Union

import numpy as np
import torch
from fairseq.hub_utils import GeneratorHubInterface
from omegaconf import open_dict

from ..data.captioning import feature_net_input


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
