"""A synthetic sequence-reversal task for smoke tests and the quick demo.

``python -m fairseq_tpr.corpora.synthetic OUTDIR`` writes ``{train,valid,test}.{src,tgt}``:
each source line is a random sequence of letters, the target is its reversal.
"""
import argparse
import random
import sys
from pathlib import Path

ALPHABET = "abcdefghijklmnop"


def write_reversal_task(outdir, n_train=2000, n_valid=100, n_test=50, min_len=3, max_len=10, seed=1):
    """Write the six files and return ``{split: number of lines}``."""
    rng = random.Random(seed)
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    counts = {}
    for split, n in (("train", n_train), ("valid", n_valid), ("test", n_test)):
        src_lines, tgt_lines = [], []
        for _ in range(n):
            seq = [rng.choice(ALPHABET) for _ in range(rng.randint(min_len, max_len))]
            src_lines.append(" ".join(seq))
            tgt_lines.append(" ".join(reversed(seq)))
        (outdir / f"{split}.src").write_text("\n".join(src_lines) + "\n")
        (outdir / f"{split}.tgt").write_text("\n".join(tgt_lines) + "\n")
        counts[split] = n
    return counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir")
    parser.add_argument("--train", type=int, default=2000)
    parser.add_argument("--valid", type=int, default=100)
    parser.add_argument("--test", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    counts = write_reversal_task(args.outdir, args.train, args.valid, args.test, seed=args.seed)
    print(f"reversal task in {args.outdir}: " + ", ".join(f"{k} {v} lines" for k, v in counts.items()))


if __name__ == "__main__":
    from fairseq_tpr.errors import command

    sys.exit(command(main)())
