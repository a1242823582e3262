# Sourced by train_paper.sh and train_cpu.sh (no arguments: it reads and shifts theirs).
# Expects ARCH_SUFFIX ("" for the paper sizes, "_small" for the CPU variant); sets model, data,
# save, arch (tp_transformer -> tp_transformer_math$ARCH_SUFFIX, transformer -> its matched
# transformer_tp_math$ARCH_SUFFIX) and ROOT, and leaves the extra fairseq-train args in "$@".
if [[ $# -lt 3 ]]; then
    sed -n '2,/^[^#]/{/^#/p}' "$0" >&2
    exit 2
fi
model=$1 data=$2 save=$3
shift 3
case "$model" in
    tp_transformer) arch=tp_transformer_math$ARCH_SUFFIX ;;
    transformer) arch=transformer_tp_math$ARCH_SUFFIX ;;
    *) echo "error: model must be tp_transformer or transformer (got '$model')" >&2; exit 2 ;;
esac
[[ -f "$data/dict.q.txt" ]] || { echo "error: $data/dict.q.txt not found: build DATA_BIN with preprocess/math_dataset.sh" >&2; exit 1; }
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
