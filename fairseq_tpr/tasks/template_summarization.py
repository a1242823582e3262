"""Task ``template_summarization``: source + template -> summary, for STTR (Sun, Wang, Li).

Data directory: what ``fairseq-preprocess --joined-dictionary`` writes for the source/target
pair (``dict.{src}.txt``, ``dict.{tgt}.txt``, ``{split}.{src}-{tgt}.{src|tgt}.{bin,idx}``)
plus, for every split, the templates as a third "language" of the pair, binarized with the
SOURCE dictionary: ``{split}.{src}-{tgt}.template.{bin,idx}`` (``preprocess/templates.sh``
writes them from ``{split}.template`` text files, one template per source line).

On loading, the template and source counts must match and no template may be empty; either
error names both files. Templates longer than ``--max-template-positions`` (default: the
source limit) are cut, keeping the end-of-sentence marker. Batches carry
``net_input["template_tokens"]`` (``B x T``) and ``net_input["template_lengths"]``.

``fairseq-interactive`` reads ``document<TAB>template`` per line: the two halves go through
``--tokenizer``/``--bpe`` separately and are encoded with the source dictionary; inside
fairseq's interactive loop they travel as one row (document tokens, its end-of-sentence
marker, template tokens) and :meth:`TemplateSummarizationTask.inference_step` splits them
again before the model sees them, so the printed ``S-`` line shows document and template
one after the other.
"""
import os
from dataclasses import dataclass, field
from typing import List, Optional

import torch
from fairseq import utils
from fairseq.data import data_utils, indexed_dataset
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask

from ..data.template_pair_dataset import TemplatePairDataset, check_templates
from ..errors import InputError

TEMPLATE_LANG = "template"


@dataclass
class TemplateSummarizationConfig(TranslationConfig):
    max_template_positions: Optional[int] = field(
        default=None, metadata={"help": "cut templates to this many tokens (default: --max-source-positions)"}
    )


def template_prefix(data_path: str, split: str, src: str, tgt: str, impl=None) -> Optional[str]:
    """``{data}/{split}.{src}-{tgt}.template`` (or ``{tgt}-{src}``) if its .bin/.idx exist, else None."""
    for pair in (f"{src}-{tgt}", f"{tgt}-{src}"):
        prefix = os.path.join(data_path, f"{split}.{pair}.{TEMPLATE_LANG}")
        if indexed_dataset.dataset_exists(prefix, impl=impl):
            return prefix
    return None


@register_task("template_summarization", dataclass=TemplateSummarizationConfig)
class TemplateSummarizationTask(TranslationTask):
    """Translation task with a template per source (module docstring)."""

    cfg: TemplateSummarizationConfig

    @classmethod
    def setup_task(cls, cfg, **kwargs):
        """fairseq's, after checking that the data directory and its two dictionaries exist (an
        :class:`InputError` naming the missing path and the commands that write it)."""
        data = utils.split_paths(cfg.data)[0] if cfg.data else ""
        src, tgt = cfg.source_lang or "source", cfg.target_lang or "target"
        make = (f"binarize the source/target pair with `fairseq-preprocess --joined-dictionary -s {src} -t {tgt} "
                f"--destdir {data or 'DATA'} ...` (preprocess/<corpus>.sh does it), then its templates with "
                f"`preprocess/templates.sh RAW_DIR {data or 'DATA'} {src} {tgt}`")
        if not data or not os.path.isdir(data):
            raise InputError(f"the data directory {data or '(none given)'} of --task template_summarization does "
                             f"not exist: {make}.")
        langs = (cfg.source_lang, cfg.target_lang)
        if None in langs:
            langs = data_utils.infer_language_pair(data)
            if None in langs:
                raise InputError(f"no {{split}}.SRC-TGT.SRC.bin in {data} to tell the languages from: pass "
                                 f"--source-lang/--target-lang (e.g. -s source -t target), or {make}.")
        for lang in langs:
            path = os.path.join(data, f"dict.{lang}.txt")
            if not os.path.isfile(path):
                raise InputError(f"{path} is missing (--task template_summarization reads the source and "
                                 f"target dictionaries of {data}): {make}.")
        return super().setup_task(cfg, **kwargs)

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        paths = utils.split_paths(self.cfg.data)
        data_path = paths[(epoch - 1) % len(paths)] if split == self.cfg.train_subset else paths[0]
        src, tgt = self.cfg.source_lang, self.cfg.target_lang
        make_templates = (f"write {split}.template (one template per source line, e.g. with "
                          f"`python -m fairseq_tpr.cli.retrieve_templates`) and binarize it with "
                          f"`preprocess/templates.sh RAW_DIR {data_path} {src} {tgt}`")
        if not any(indexed_dataset.dataset_exists(os.path.join(data_path, f"{split}.{pair}.{src}"),
                                                  impl=self.cfg.dataset_impl) for pair in (f"{src}-{tgt}", f"{tgt}-{src}")):
            raise InputError(
                f"no split {split!r} in {data_path}: {data_path}/{split}.{src}-{tgt}.{src}.bin/.idx is missing. "
                f"Binarize it with the data directory's dictionary (`fairseq-preprocess -s {src} -t {tgt} "
                f"--joined-dictionary --srcdict {data_path}/dict.{src}.txt --testpref RAW_DIR/{split} --destdir "
                f"{data_path}`, or --trainpref/--validpref), then {make_templates}."
            )
        prefix = template_prefix(data_path, split, src, tgt, self.cfg.dataset_impl)
        if prefix is None:
            raise InputError(
                f"no templates for split {split!r}: {data_path}/{split}.{src}-{tgt}.{TEMPLATE_LANG}.bin/.idx is "
                f"missing: {make_templates}."
            )
        super().load_dataset(split, epoch=epoch, combine=combine, **kwargs)
        pair = self.datasets[split]
        templates = data_utils.load_indexed_dataset(prefix, self.src_dict, self.cfg.dataset_impl)
        check_templates(templates, templates.sizes, len(pair), prefix + ".bin",
                        os.path.join(data_path, f"{split}.{src}-{tgt}.{src}.bin"))
        self.datasets[split] = TemplatePairDataset(
            pair.src, pair.src_sizes, pair.src_dict, templates, templates.sizes,
            pair.tgt, pair.tgt_sizes, pair.tgt_dict,
            left_pad_source=pair.left_pad_source, left_pad_target=pair.left_pad_target, shuffle=pair.shuffle,
            align_dataset=pair.align_dataset, eos=pair.eos, pad_to_multiple=pair.pad_to_multiple,
            max_template_positions=self.max_template_positions(),
        )

    def max_template_positions(self) -> int:
        return self.cfg.max_template_positions or self.cfg.max_source_positions

    # ------------------------------------------------------------------ fairseq-interactive
    def get_interactive_tokens_and_lengths(self, lines: List[str], encode_fn):
        """``document<TAB>template`` lines -> one row per line: document tokens (ending in
        ``</s>``) followed by template tokens (ending in ``</s>``); split again by
        :meth:`inference_step`."""
        tokens = []
        for i, line in enumerate(lines):
            if "\t" not in line:
                raise InputError(
                    f"input line {i + 1} of this batch has no tab: template_summarization needs "
                    f"'document<TAB>template' on every line (got {line[:80]!r})."
                )
            document, template = line.split("\t", 1)
            if not document.strip() or not template.strip():
                which = "document" if not document.strip() else "template"
                raise InputError(
                    f"input line {i + 1} of this batch has an empty {which}: give 'document<TAB>template' "
                    f"(got {line[:80]!r})."
                )
            doc = self.source_dictionary.encode_line(encode_fn(document), add_if_not_exist=False).long()
            tpl = self.source_dictionary.encode_line(encode_fn(template), add_if_not_exist=False).long()
            limit = self.max_template_positions()
            if len(tpl) > limit:  # cut, keeping </s>, as the dataset does
                tpl = torch.cat([tpl[: limit - 1], tpl[-1:]])
            tokens.append(torch.cat([doc, tpl]))
        return tokens, [t.numel() for t in tokens]

    def inference_step(self, generator, models, sample, prefix_tokens=None, constraints=None):
        if "template_tokens" not in sample["net_input"]:
            sample = dict(sample, net_input=self._split_interactive_rows(sample["net_input"]))
        return super().inference_step(generator, models, sample, prefix_tokens=prefix_tokens, constraints=constraints)

    def _split_interactive_rows(self, net_input):
        """Rows of ``document </s> template </s>`` (left-padded) -> source and template batches."""
        pad, eos = self.src_dict.pad(), self.src_dict.eos()
        docs, tpls = [], []
        for row in net_input["src_tokens"]:
            row = utils.strip_pad(row, pad)
            ends = (row == eos).nonzero().flatten().tolist()
            if len(ends) < 2:
                raise InputError(
                    "a batch has no template_tokens and its rows are not 'document </s> template </s>': "
                    "use fairseq-generate on data binarized with preprocess/templates.sh, or fairseq-interactive "
                    "with 'document<TAB>template' lines."
                )
            docs.append(row[: ends[0] + 1])
            tpls.append(row[ends[0] + 1:])
        left = self.cfg.left_pad_source
        return {
            "src_tokens": data_utils.collate_tokens(docs, pad, eos, left_pad=left),
            "src_lengths": torch.LongTensor([len(d) for d in docs]).to(net_input["src_lengths"].device),
            "template_tokens": data_utils.collate_tokens(tpls, pad, eos, left_pad=left),
            "template_lengths": torch.LongTensor([len(t) for t in tpls]).to(net_input["src_lengths"].device),
        }


__all__ = ["TemplateSummarizationTask", "TemplateSummarizationConfig"]
