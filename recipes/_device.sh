# Sourced by the recipes. Sets train_device (fairseq-train flags: --fp16 on CUDA unless FP16=0;
# --cpu --num-workers 0 without CUDA) and gen_device (fairseq-generate: --cpu without CUDA).
# Which one is asked of the torch that `python` imports; a `python` that cannot import torch (another
# interpreter than the environment's) stops the recipe instead of training on the CPU unasked.
train_device=() gen_device=()
_cuda=$(python -c "import torch; print(int(torch.cuda.is_available()))" 2>/dev/null) || {
    echo "error: recipes/_device.sh: '$(command -v python || echo python)' cannot import torch; put the environment" \
        "that has fairseq_tpr first on PATH (PATH=\$PWD/.venv/bin:\$PATH) and run the recipe again" >&2
    exit 1
}
if [[ "$_cuda" == 1 ]]; then
    if [[ "${FP16:-1}" == 1 ]]; then train_device=(--fp16); fi
else
    train_device=(--cpu --num-workers 0) gen_device=(--cpu)
fi
