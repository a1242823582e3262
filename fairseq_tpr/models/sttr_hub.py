"""The hub interface of STTR (``--task template_summarization``), the class that
``STTRModel.from_pretrained`` and :func:`fairseq_tpr.hub.from_pretrained` return for it."""
from typing import List, Sequence, Union

import torch
from fairseq.hub_utils import GeneratorHubInterface


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
