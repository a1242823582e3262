# Sourced by recipes/extractive/debian_cpu.sh and manpages.sh: the small CPU synthesizer both train,
# as fairseq-train flags in EXTRACTIVE_MODEL_ARGS (the attention and its heads, data, epochs, seed and
# paths are the caller's): d_model 128, d_k = d_v = 32, d_inner 512, 2 layers, a scorer MLP of 64,
# dropout 0.1, --pos-weight auto (or POS_WEIGHT), Adam lr 1e-3 with inverse-sqrt decay after 200
# warm-up updates, --max-tokens 512.
EXTRACTIVE_MODEL_ARGS=(
    --task extractive_summarization --arch discourse_synthesizer
    --encoder-embed-dim 128 --attention-head-dim 32 --encoder-ffn-embed-dim 512 --encoder-layers 2
    --scorer-hidden-dim 64 --dropout 0.1 --criterion extractive_bce --pos-weight "${POS_WEIGHT:-auto}"
    --optimizer adam --lr 1e-3 --lr-scheduler inverse_sqrt --warmup-updates 200 --max-tokens 512
    --required-batch-size-multiple 1
)
