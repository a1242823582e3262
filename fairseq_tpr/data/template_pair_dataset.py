"""Source / template / target triples for STTR (``--task template_summarization``).

:class:`TemplatePairDataset` is fairseq's :class:`LanguagePairDataset` with a third aligned
input: item ``i`` has the source, target *and template* of line ``i``. fairseq's filtering,
sorting and batching act on indices, and ``collate`` sorts a batch by source length; the
templates are put into ``net_input`` in the order of the collated batch's ``id``, so they stay
with their sources whatever order the batch comes in.

Batch keys added to ``net_input``: ``template_tokens`` (``B x T``, padded on the side the
source is padded) and ``template_lengths`` (``B``).
"""
import numpy as np
import torch
from fairseq.data import LanguagePairDataset, data_utils

from ..errors import InputError



def check_templates(templates, template_sizes, n_sources: int, template_path: str, source_path: str) -> None:
    """Same number of templates as sources, and no empty template (a line that held only the
    end-of-sentence marker after binarization). Raises :class:`InputError` naming the files."""
    if len(templates) != n_sources:
        raise InputError(
            f"{template_path} has {len(templates)} templates but {source_path} has {n_sources} sources: the "
            f"template file must have exactly one line per source line. Rebuild it with "
            f"`python -m fairseq_tpr.cli.retrieve_templates` and binarize it with preprocess/templates.sh."
        )
    empty = np.flatnonzero(np.asarray(template_sizes) <= 1)
    if len(empty):
        raise InputError(
            f"{template_path}: {len(empty)} empty template(s), first at line {empty[0] + 1}: every source needs "
            f"a non-empty template (fix the raw .template file; preprocess/templates.sh refuses empty lines)."
        )


class TemplatePairDataset(LanguagePairDataset):
    """A :class:`LanguagePairDataset` plus ``template`` (a token dataset in the source dictionary,
    aligned line by line with ``src``). ``max_template_positions`` truncates longer templates
    (the end-of-sentence marker is kept) so that they fit the template encoder's positions."""

    def __init__(self, src, src_sizes, src_dict, template, template_sizes, *args,
                 max_template_positions: int = 1024, **kwargs):
        super().__init__(src, src_sizes, src_dict, *args, **kwargs)
        if len(template) != len(src):
            raise InputError(f"{len(template)} templates for {len(src)} sources: they must be aligned")
        self.template = template
        self.template_sizes = np.minimum(np.array(template_sizes), max_template_positions)
        self.max_template_positions = max_template_positions

    def __getitem__(self, index):
        example = super().__getitem__(index)
        template = self.template[index]
        if len(template) > self.max_template_positions:
            template = torch.cat([template[: self.max_template_positions - 1], template[-1:]])
        example["template"] = template
        return example

    def collater(self, samples, pad_to_length=None):
        res = super().collater(samples, pad_to_length=pad_to_length)
        if len(samples) == 0 or "id" not in res:
            return res
        by_id = {s["id"]: s["template"] for s in samples}
        templates = [by_id[int(i)] for i in res["id"]]  # the order of the collated (sorted) batch
        res["net_input"]["template_tokens"] = data_utils.collate_tokens(
            templates, self.src_dict.pad(), self.eos, left_pad=self.left_pad_source,
        )
        res["net_input"]["template_lengths"] = torch.LongTensor([t.numel() for t in templates])
        return res

    def num_tokens(self, index):
        """The longest of source, template and target: ``--max-tokens`` bounds the template encoder too."""
        return max(super().num_tokens(index), self.template_sizes[index])

    def num_tokens_vec(self, indices):
        return np.maximum(super().num_tokens_vec(indices), self.template_sizes[indices])

    def prefetch(self, indices):
        super().prefetch(indices)
        self.template.prefetch(indices)

    @property
    def supports_prefetch(self):
        return super().supports_prefetch and getattr(self.template, "supports_prefetch", False)
