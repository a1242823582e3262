"""METEOR 1.5 (Denkowski & Lavie 2014) through ``pycocoevalcap``: the jar the COCO caption
evaluation ships, run as that package runs it (``java -jar -Xmx2G meteor-1.5.jar - - -stdio -l en
-norm``: English, normalised and lower-cased, exact + stem + synonym + paraphrase modules with the
default weights). Jiang et al. report METEOR next to ROUGE.

The reported METEOR is the jar's corpus-level score (from the summed sufficient statistics of
all segments, what ``pycocoevalcap`` returns); the mean of the segment scores is kept as
``segment_mean``. Every reference set is passed (METEOR scores against the best-matching
reference). In character mode each character is a space-separated token; only exact matches
can fire for Chinese, so the CLI runs METEOR in that mode only when asked by name.

Needs Java on PATH (Debian ``default-jre-headless``, installed by ``scripts/system_deps.sh``).
"""
import shutil
from importlib.util import find_spec
from pathlib import Path

from ..errors import DependencyError
from .base import ScoreResult, Scorer, mean
from .text import char_tokens

JAR = "meteor-1.5.jar"
COMMAND = "java -jar -Xmx2G meteor-1.5.jar - - -stdio -l en -norm"


def _jar_dir():
    spec = find_spec("pycocoevalcap")
    if spec is None or not spec.submodule_search_locations:
        raise DependencyError("METEOR needs the 'pycocoevalcap' package: "
                              "pip install --no-build-isolation 'fairseq_tpr[captioning]'")
    meteor_dir = Path(list(spec.submodule_search_locations)[0]) / "meteor"
    if not (meteor_dir / JAR).is_file():
        raise DependencyError(f"pycocoevalcap is installed but {meteor_dir / JAR} is missing: reinstall pycocoevalcap")
    return meteor_dir


def _clean(text):
    """One line without METEOR's field separator ``|||``."""
    return " ".join(text.replace("|||", " ").split())


class MeteorScorer(Scorer):
    """``--metrics meteor``."""

    key = "meteor"

    def __init__(self, char=False):
        self.char = char
        self._meteor = None  # pycocoevalcap's Meteor: one java process, reused across score() calls

    def check(self):
        _jar_dir()
        if shutil.which("java") is None:
            raise DependencyError(
                "METEOR 1.5 needs Java on PATH: install a JRE, e.g. sudo apt-get install "
                "default-jre-headless (scripts/system_deps.sh does this)")

    def _prepare(self, text):
        return " ".join(char_tokens(text)) if self.char else _clean(text)

    def score(self, hyps, refs):
        """Score with the scorer's METEOR process (started on the first call, kept for the next)."""
        self.check()
        if self._meteor is None:
            from pycocoevalcap.meteor.meteor import Meteor

            self._meteor = Meteor()
        meteor = self._meteor
        gts = {i: [self._prepare(ref_set[i]) for ref_set in refs] for i in range(len(hyps))}
        res = {i: [self._prepare(h)] for i, h in enumerate(hyps)}
        try:
            corpus, segments = meteor.compute_score(gts, res)
        except (ValueError, BrokenPipeError) as err:  # the jar died: its stderr says why
            meteor.meteor_p.kill()
            stderr = meteor.meteor_p.stderr.read().decode(errors="replace")
            self._meteor = None
            raise RuntimeError(f"METEOR 1.5 ({COMMAND}) failed: {err}\n{stderr[-2000:]}") from None
        finally:
            if meteor.lock.locked():
                meteor.lock.release()
        return ScoreResult(
            scorer=self.key, label="METEOR 1.5 (pycocoevalcap)", version="1.5",
            settings={
                "command": COMMAND,
                "modules": "exact, stem, synonym, paraphrase (METEOR 1.5 defaults for English)",
                "input": "space-separated characters" if self.char else "text as given (-norm tokenizes and lower-cases)",
                "aggregate": "corpus-level score of the jar; segment_mean = mean of segment scores",
                "references": f"all {len(refs)} reference set(s)",
            },
            metrics={"METEOR": {"score": 100 * corpus, "segment_mean": 100 * mean(segments)}},
        )
