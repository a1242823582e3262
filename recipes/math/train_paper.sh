#!/usr/bin/env bash
# Schlag et al. 2019 training setup on the Mathematics Dataset, for GPUs.
#
#   recipes/math/train_paper.sh {tp_transformer|transformer} DATA_BIN SAVE_DIR [extra fairseq-train args]
#
# tp_transformer -> --arch tp_transformer_math, transformer -> its matched --arch transformer_tp_math
# (6+6 layers, d 512, d_ff 2048, 8 heads, dropout 0, shared embeddings, pre-LN).
# Paper settings: Adam lr 1e-4, betas (0.9, 0.995), gradient norm clipped at 0.1, batch 1024
# sentences (here BATCH x UPDATE_FREQ x GPUs; defaults 256 x 4 on one GPU), up to 1.7M steps.
# DATA_BIN comes from preprocess/math_dataset.sh. Environment: BATCH (256), UPDATE_FREQ (4),
# MAX_UPDATE (1700000), FP16 (1: --fp16 on CUDA).
set -euo pipefail
ARCH_SUFFIX=""
source "$(dirname "${BASH_SOURCE[0]}")/_args.sh"
fp16=()
[[ "${FP16:-1}" == 1 ]] && python -c "import torch,sys; sys.exit(not torch.cuda.is_available())" && fp16=(--fp16)

fairseq-train "$data" --user-dir "$ROOT/fairseq_tpr" --task translation --source-lang q --target-lang a \
    --arch "$arch" \
    --criterion label_smoothed_cross_entropy_with_roles --label-smoothing 0.0 --report-accuracy \
    --optimizer adam --adam-betas '(0.9, 0.995)' --lr 1e-4 --clip-norm 0.1 \
    --batch-size "${BATCH:-256}" --update-freq "${UPDATE_FREQ:-4}" --required-batch-size-multiple 1 \
    --max-update "${MAX_UPDATE:-1700000}" --validate-interval-updates 10000 --save-interval-updates 10000 \
    --keep-interval-updates 5 --no-epoch-checkpoints \
    --save-dir "$save" "${fp16[@]}" "$@"
