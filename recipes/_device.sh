# Sourced by the recipes. Sets train_device (fairseq-train flags: --fp16 on CUDA unless FP16=0;
# --cpu --num-workers 0 without CUDA) and gen_device (fairseq-generate: --cpu without CUDA).
train_device=() gen_device=()
if python -c "import torch,sys; sys.exit(not torch.cuda.is_available())"; then
    if [[ "${FP16:-1}" == 1 ]]; then train_device=(--fp16); fi
else
    train_device=(--cpu --num-workers 0) gen_device=(--cpu)
fi
