"""Console scripts answer ``--help`` and argument errors without importing torch or fairseq, and the
plugin still registers itself with fairseq however it is reached (``fairseq_tpr/__init__.py``).

The check is which modules are loaded after parsing (deterministic), never a wall time. Each
script runs in a fresh interpreter exactly as its console-script wrapper runs it
(``from MODULE import FUNC; sys.exit(FUNC())``), so the test needs no reinstall after a script is
added to ``pyproject.toml``.
"""
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
HEAVY = ("torch", "fairseq")
MARK = "@@loaded:"

# imports its library (torch) at the top: the module is not this change's to edit

_WRAPPER = """
import sys
sys.argv = [{name!r}] + {args!r}
from {module} import {func}
try:
    status = {func}()
except SystemExit as e:
    status = e.code
print({mark!r} + ",".join(m for m in {heavy!r} if m in sys.modules))
sys.exit(status)
"""


def _run_script(name, args):
    module, func = SCRIPTS[name].split(":") if name in SCRIPTS else (name, "main")
    code = _WRAPPER.format(name=name, args=list(args), module=module, func=func, mark=MARK, heavy=HEAVY)
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    out, _, loaded = r.stdout.rpartition(MARK)
    return r.returncode, out, r.stderr, [m for m in loaded.strip().split(",") if m]


def test_every_console_script_is_covered():
    assert len(SCRIPTS) >= 12 and all(n.startswith("fairseq-tpr-") for n in SCRIPTS)


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_help_exits_0(name):
    status, out, err, _ = _run_script(name, ["--help"])
    assert status == 0, err
    assert out.startswith("usage:"), out[:200]
    assert "Traceback" not in err


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_bad_argument_is_one_usage_error_line(name):
    status, out, err, _ = _run_script(name, ["--no-such-option"])
    assert status == 2, err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1 and errors[0].startswith(f"{name}: error: "), err
    assert err.startswith("usage:")


@pytest.mark.parametrize("args", [["--help"], ["--no-such-option"]], ids=["help", "bad-argument"])
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_parsing_imports_neither_torch_nor_fairseq(name, args):
    status, _, err, loaded = _run_script(name, args)
    assert status in (0, 2), err
    assert loaded == [], f"{name} {' '.join(args)} imported {loaded} before its arguments were parsed"


# the modules of cli/ that are run as ``python -m fairseq_tpr.cli.NAME`` (no console script)
PYTHON_M = sorted({f"fairseq_tpr.cli.{p.stem}" for p in (REPO / "fairseq_tpr" / "cli").glob("*.py")
                   if p.stem != "__init__"} - {target.split(":")[0] for target in SCRIPTS.values()})


@pytest.mark.parametrize("module", PYTHON_M)
def test_python_m_commands_parse_without_torch_or_fairseq(module):
    status, out, err, loaded = _run_script(module, ["--help"])
    assert status == 0 and out.startswith("usage:"), err
    assert loaded == [], f"python -m {module} --help imported {loaded}"


def test_the_scripts_and_the_library_read_one_copy_of_their_choices():
    """The choices a script shows in --help are the library's own objects (fairseq_tpr/choices.py),
    not copies, and under their one name (no module keeps an alias of them); the scorer keys are the
    keys of the scorer registry."""
    from fairseq_tpr import choices
    from fairseq_tpr.analysis import capture, dump, layer_probe
    from fairseq_tpr.analysis import roles as analysis_roles
    from fairseq_tpr.analysis import template_similarity as ts
    from fairseq_tpr.cli import caption_score, parse, pos_tagger, probe, roles, score, template_similarity
    from fairseq_tpr.grammar import parser_model
    from fairseq_tpr.grammar import tagger_model as modules_pos
    from fairseq_tpr.scoring import SCORERS, captions, text

    assert tuple(SCORERS) == score.SCORERS is choices.SCORER_KEYS
    assert text.SENTENCE_SPLITS is score.SENTENCE_SPLITS and text.DEFAULT_SENTENCE_SPLIT is score.DEFAULT_SENTENCE_SPLIT
    assert captions.METRICS is caption_score.METRICS
    assert layer_probe.REPRESENTATIONS is probe.REPRESENTATIONS
    assert ts.DEFAULT_BATCH_SIZE == template_similarity.DEFAULT_BATCH_SIZE == choices.SIMILARITY_BATCH_SIZE
    for module, names in ((capture, ["CAPTURE_COMPONENTS"]), (dump, ["CAPTURE_COMPONENTS"]),
                          (roles, ["CAPTURE_COMPONENTS", "ROLE_COMPONENTS"]),
                          (analysis_roles, ["CAPTURE_COMPONENTS", "ROLE_COMPONENTS"]),
                          (modules_pos, ["POS_FEATURES", "POS_SCORERS", "POS_CONTEXTS"]),
                          (pos_tagger, ["POS_FEATURES", "POS_SCORERS", "POS_CONTEXTS"]),
                          (parser_model, ["PARSER_FEATURES", "LAYER_INPUTS"]), (parse, ["PARSER_FEATURES", "LAYER_INPUTS"])):
        for name in names:
            assert getattr(module, name) is getattr(choices, name), (module.__name__, name)
        aliases = [k for k, v in vars(module).items() if isinstance(v, tuple) and not hasattr(choices, k)
                   and any(v is getattr(choices, n) for n in dir(choices) if n.isupper())]
        assert not aliases, f"{module.__name__} keeps aliases of fairseq_tpr/choices.py: {aliases}"


def _python(code):
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


_REGISTERED = """
from fairseq.models import ARCH_MODEL_REGISTRY
from fairseq.criterions import CRITERION_REGISTRY
from fairseq.tasks import TASK_REGISTRY
from fairseq.scoring import SCORER_REGISTRY
from fairseq import checkpoint_utils, utils
assert "tp_transformer_d" in ARCH_MODEL_REGISTRY and "sttr" in ARCH_MODEL_REGISTRY
assert "label_smoothed_cross_entropy_with_roles" in CRITERION_REGISTRY and "extractive_bce" in CRITERION_REGISTRY
assert "image_captioning" in TASK_REGISTRY and "rouge" in SCORER_REGISTRY
assert getattr(utils.softmax, "fairseq_tpr_fixed", False)                       # fairseq_fixes.apply_all()
assert getattr(checkpoint_utils.load_checkpoint_to_cpu, "fairseq_tpr_fixed", False)
import argparse, torch
assert argparse.Namespace in torch.serialization.get_safe_globals()             # checkpoint_safety
assert getattr(sys.excepthook, "fairseq_tpr", False)                            # errors.install_excepthook()
"""


def test_import_is_light_and_changes_nothing():
    """``import fairseq_tpr`` loads neither torch nor fairseq, installs no hook and registers nothing:
    fairseq imported after it does not see the plugin until something registers it."""
    _python("import sys, logging; logging.basicConfig(level=logging.INFO); import fairseq_tpr\n"
            "assert not {'torch', 'fairseq'} & set(sys.modules), 'import fairseq_tpr loaded torch or fairseq'\n"
            "assert sys.excepthook is sys.__excepthook__ and not any('_AfterImport' in repr(f) for f in sys.meta_path)\n"
            "from fairseq.models import ARCH_MODEL_REGISTRY\n"
            "assert 'tp_transformer_d' not in ARCH_MODEL_REGISTRY\n")


def test_register_registers_everything_once():
    r = _python("import sys, logging; logging.basicConfig(level=logging.INFO); import fairseq_tpr\n"
                "fairseq_tpr.register(); fairseq_tpr.register()\n" + _REGISTERED)
    assert "tensorboardX" not in r.stderr


def test_user_dir_import_registers_the_plugin():
    """What ``--user-dir fairseq_tpr`` does: fairseq imports the package, then ``tasks/`` and
    ``models/``, whose ``__init__`` registers the rest."""
    _python("import sys\nfrom argparse import Namespace\nfrom fairseq import utils\n"
            f"utils.import_user_module(Namespace(user_dir={str(REPO / 'fairseq_tpr')!r}))\n" + _REGISTERED)


@pytest.mark.parametrize("module", ["fairseq_tpr.models.sttr", "fairseq_tpr.tasks.image_captioning", "fairseq_tpr.hub"])
def test_importing_models_or_tasks_registers_the_plugin(module):
    """A model class, a task or the hub imported in Python comes with the whole plugin registered."""
    _python(f"import sys, {module}\n" + _REGISTERED)


def test_fairseq_train_user_dir_registers_the_plugin():
    """``fairseq-train --user-dir``: fairseq imports only ``models/`` and ``tasks/`` of a user dir;
    the criterions and ``--scoring rouge`` in the help come from the registration they run."""
    exe = Path(sys.executable).parent / "fairseq-train"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "fairseq_cli.train"]
    r = subprocess.run(cmd + ["--help", "--user-dir", str(REPO / "fairseq_tpr"), "--arch", "tp_transformer_d_tiny",
                              "--task", "translation"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    for name in ("label_smoothed_cross_entropy_with_roles", "extractive_bce", ",rouge}"):
        assert name in r.stdout, name
