"""WMT'14 English-German: RAW holds {train,valid,test}.{en,de} as written by fairseq's
examples/translation/prepare-wmt14en2de.sh (tokenized and BPE'd, '@@ ' continuation markers).
The default --bpe none binarizes the text as it is; OUT/text/ gets the markers removed."""
import sys

from . import linefiles, prepare

DESCRIPTION = __doc__
LANGS = ("en", "de")
DEFAULT_BPE = "none"
STRIP_BPE = True


def read(raw, args):
    return linefiles.read_or_explain(raw, ("en", "de"), "WMT'14 en-de"), {"layout": "line files {split}.{en,de}"}


def main(argv=None):
    """``python -m fairseq_tpr.corpora.wmt14_en_de RAW OUT [options]`` (``preprocess/wmt14_en_de.sh``); see :mod:`.prepare`."""
    return prepare.main(["wmt14_en_de", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
