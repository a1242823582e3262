"""Console scripts of fairseq_tpr (see ``[project.scripts]`` in pyproject.toml)."""
