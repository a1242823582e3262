"""Gigaword headline generation: RAW holds {train,valid,test}.{src,tgt} (article first
sentence, headline; one example per line, as in BiSET's release). Template files that may sit
alongside (BiSET's *.template / retrieval output) are ignored here."""
import sys

from . import linefiles, prepare

DESCRIPTION = __doc__
LANGS = ("source", "target")
DEFAULT_BPE = "sentencepiece"


def read(raw, args):
    return linefiles.read_or_explain(raw, ("src", "tgt"), "Gigaword"), {"layout": "line files {split}.{src,tgt}"}


def main(argv=None):
    """``python -m fairseq_tpr.corpora.gigaword RAW OUT [options]`` (``preprocess/gigaword.sh``); see :mod:`.prepare`."""
    return prepare.main(["gigaword", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
