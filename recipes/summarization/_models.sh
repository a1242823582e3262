# Sourced by the summarization and translation recipes. Sets `arch` and `size_args` for
#   MODEL in {transformer, tp_transformer, tp_transformer_d}  and  SIZE in {paper, small}.
# paper: Jiang et al. Sec. 4.2 (6+6 layers, 8 heads, d_k 64, d 512, d_ff 2048, N_r 50, d_r 64,
#        dropout 0.1); the transformer is fairseq's own at the same sizes with pre-LN cells.
# small: the CPU variant of docs/results.md (3+3 layers, 4 heads, d 128, d_ff 512, N_r NUM_ROLES (25), d_r 32).
#        N_r 25, not the paper's 50: at d 128 the role scorers of 50 roles are 18% more matmul work
#        than the transformer (at the paper's d 512: 9%); 25 roles keep the paper's share (+9%).
#        docs/benchmarks.md has the measurement; NUM_ROLES=50 gives the early snapshots' model.
# WMT (TRANSLATION=1): Schlag et al. A.3 uses fairseq's transformer_wmt_en_de sizes for both models.
set_model() {
    local model=$1 size=${2:-paper}
    case "$model" in
        transformer) arch=transformer_tp_d ;;
        tp_transformer) arch=tp_transformer ;;
        tp_transformer_d) arch=tp_transformer_d ;;
        *) echo "error: MODEL must be transformer, tp_transformer or tp_transformer_d (got '$model')" >&2; return 2 ;;
    esac
    if [[ "${TRANSLATION:-0}" == 1 ]]; then
        case "$model" in
            transformer) arch=transformer_tp_wmt_en_de ;;
            tp_transformer) arch=tp_transformer_wmt_en_de ;;
            tp_transformer_d) arch=tp_transformer_d ;;  # no WMT preset in either paper: the base sizes (= transformer_wmt_en_de's)
        esac
    fi
    size_args=()
    case "$size" in
        paper) ;;
        small)
            size_args=(--encoder-layers 3 --decoder-layers 3 --encoder-embed-dim 128 --decoder-embed-dim 128
                       --encoder-ffn-embed-dim 512 --decoder-ffn-embed-dim 512
                       --encoder-attention-heads 4 --decoder-attention-heads 4)
            if [[ "$model" == tp_transformer_d ]]; then size_args+=(--num-roles "${NUM_ROLES:-25}" --role-dim 32); fi
            ;;
        *) echo "error: SIZE must be paper or small (got '$size')" >&2; return 2 ;;
    esac
}
