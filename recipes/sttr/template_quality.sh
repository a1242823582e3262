#!/usr/bin/env bash
# How good retrieved STTR templates are as summaries themselves (docs/sttr.md, "Quality of the retrieved
# templates"): ROUGE of each article's template against its reference summary, on the test split (BM25
# top-1 with the default flags, BM25 top-5 reranked by ROUGE-1, a random training summary) and on 5,000
# training lines drawn with seed 1 (BM25 top-1 with the default flags, and with --exclude-same group:
# never a template from the query's own split group).
#
#   recipes/sttr/template_quality.sh TEXT_DIR OUT [RECORD]
#
# TEXT_DIR: {train,test}.{source,target} and {train,test}.group (preprocess/debian.sh's summarization/text).
# Templates are retrieved on the plain text by fairseq-tpr-retrieve-templates and scored by
# fairseq-tpr-score (rouge-score with stemming, F1; ROUGE-L sentence-level). Stages whose output exists
# are skipped, so a rerun resumes. RECORD (default OUT/template_quality.json): every score, the commands.
set -euo pipefail
if [[ $# -lt 2 ]]; then sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 2; fi
TEXT=$1; OUT=$2; RECORD=${3:-$OUT/template_quality.json}
BIN=${FAIRSEQ_BIN:-.venv/bin}
SAMPLE=5000
mkdir -p "$OUT"

retrieve() {  # NAME FLAGS...: templates of OUT/NAME, once
    local name=$1; shift
    if [[ ! -f "$OUT/$name/done" ]]; then
        echo "[$(date -u +%H:%M:%S)] retrieve $name: $*"
        "$BIN/fairseq-tpr-retrieve-templates" "$TEXT" --out "$OUT/$name" --no-progress "$@"
        touch "$OUT/$name/done"
    fi
}
retrieve test_top1 --splits test
retrieve test_top5_rouge1 --splits test --top-k 5 --rerank rouge1
retrieve test_random --splits test --random-templates --seed 1
retrieve train_top1 --splits train
retrieve train_group --splits train --exclude-same group

# the same SAMPLE training lines (seed 1) of the references and of both training templates
"$BIN/python" - "$TEXT/train.target" "$OUT" "$SAMPLE" <<'EOF'
import random, sys
from pathlib import Path
ref, out, n = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
lines = ref.read_text(encoding="utf-8").splitlines()
keep = sorted(random.Random(1).sample(range(len(lines)), n))
(out / "train_sample.target").write_text("".join(lines[i] + "\n" for i in keep), encoding="utf-8")
for name in ("train_top1", "train_group"):
    templates = (out / name / "train.template").read_text(encoding="utf-8").splitlines()
    assert len(templates) == len(lines), (name, len(templates), len(lines))
    (out / name / "train_sample.template").write_text("".join(templates[i] + "\n" for i in keep), encoding="utf-8")
EOF

score() {  # NAME HYP REF
    "$BIN/fairseq-tpr-score" --hyp "$2" --ref "$3" --metrics rouge --json "$OUT/$1.score.json" > /dev/null
}
score test_top1 "$OUT/test_top1/test.template" "$TEXT/test.target"
score test_top5_rouge1 "$OUT/test_top5_rouge1/test.template" "$TEXT/test.target"
score test_random "$OUT/test_random/test.template" "$TEXT/test.target"
score train_top1 "$OUT/train_top1/train_sample.template" "$OUT/train_sample.target"
score train_group "$OUT/train_group/train_sample.template" "$OUT/train_sample.target"

"$BIN/python" - "$OUT" "$RECORD" "$TEXT" "$*" <<'EOF'
import json, sys, time
from pathlib import Path
out, record, text, args = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
rows = {}
for name in ("test_top1", "test_top5_rouge1", "test_random", "train_top1", "train_group"):
    report = json.loads((out / f"{name}.score.json").read_text())
    metrics = report["scorers"][0]["metrics"]
    rows[name] = {"segments": report["segments"],
                  **{m: metrics[m]["f"] for m in ("ROUGE-1", "ROUGE-2", "ROUGE-L")}}
record.write_text(json.dumps({
    "what": "ROUGE F1 (rouge-score, stemming; ROUGE-L sentence-level) of retrieved templates against the "
            "reference summaries", "text": text, "date": time.strftime("%Y-%m-%d"),
    "command": f"recipes/sttr/template_quality.sh {args}", "rows": rows}, indent=1) + "\n")
print(f"wrote {record}")
for name, row in rows.items():
    print(f"| {name} | {row['segments']} | {row['ROUGE-1']:.2f} | {row['ROUGE-2']:.2f} | {row['ROUGE-L']:.2f} |")
EOF
