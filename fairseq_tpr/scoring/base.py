"""What every scorer of this package returns; one that cannot run here raises
:class:`~fairseq_tpr.errors.DependencyError` from ``check()``."""
from dataclasses import asdict, dataclass, field


@dataclass
class ScoreResult:
    """Scores on a 0-100 scale. ``metrics`` maps a metric name ("ROUGE-1", "METEOR", "BLEU") to
    ``{"f": F1, "p": precision, "r": recall}`` for ROUGE, ``{"score": ...}`` otherwise, plus any
    extra keys (confidence intervals, the ROUGE-L level)."""

    scorer: str  # the --metrics key: rouge, rouge-perl, meteor, bleu
    label: str  # human name with version, for the table
    version: str
    settings: dict
    metrics: dict
    notes: list = field(default_factory=list)

    def headline(self, metric):
        """The number printed in the table: F1 for ROUGE, the score otherwise."""
        values = self.metrics[metric]
        return values["f"] if "f" in values else values["score"]

    def to_json(self):
        return asdict(self)


class Scorer:
    """One scorer variant. ``check()`` raises :class:`~fairseq_tpr.errors.DependencyError` before
    any work; ``score(hyps, refs)`` takes the hypotheses and a list of reference sets (each as long as
    ``hyps``) and returns a :class:`ScoreResult`."""

    key = None

    def check(self):
        pass

    def score(self, hyps, refs):
        raise NotImplementedError


def mean(values):
    values = list(values)
    return sum(values) / len(values) if values else 0.0
