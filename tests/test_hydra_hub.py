"""fairseq-hydra-train and the Python hub interface, for every architecture of the plugin.

Hydra: for every registered plugin arch, the model built from a Hydra config (a shipped YAML of
``fairseq_tpr/config``, composed in-process the way fairseq-hydra-train composes it, with
``model._name`` set to the arch and a non-default model option added) equals the model of
fairseq-train's command line with the same settings: the same parameter names and shapes, and the
same first-batch loss (same seed, dropout on). The option must change the model (it was silently
dropped before). The paper presets' YAMLs build their own arch unchanged. One real
fairseq-hydra-train run (tp_transformer_d.yaml, tiny, ``+model.num_roles=5``) next to the same
fairseq-train run logs the same parameter count and losses.

Hub: ``from_pretrained(...)`` of a checkpoint of every family (tiny, 2 updates with fairseq's
Trainer; tp_transformer_d from the fairseq-hydra-train run) answers as the command line tool does:
``translate`` = fairseq-interactive (text to text, STTR's ``document<TAB>template`` and
``summarize``), ``caption`` = fairseq-generate on the test images, ``extract`` =
fairseq-tpr-extract. The CLIs of the comparisons run in this process (no import cost).
"""
import json
import logging
import random
import re
from argparse import Namespace
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch
from fairseq import options, tasks
from fairseq.data import Dictionary, indexed_dataset
from fairseq.dataclass.initialize import add_defaults, hydra_init
from fairseq.dataclass.utils import convert_namespace_to_omegaconf, omegaconf_no_object_check
from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_NAME_REGISTRY
from fairseq.trainer import Trainer
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

import fairseq_tpr  # noqa: F401  (registered by conftest.py, as --user-dir registers it)
from fairseq_tpr import hub
from fairseq_tpr.errors import ConfigError, InputError
from fairseq_tpr.data.extractive_dataset import SplitWriter
from fairseq_tpr.corpora.rst_trees import parse_tree
from fairseq_tpr.modules.tree_attention import right_branching_tree, tree_to_arrays

REPO = Path(__file__).resolve().parents[1]
USER_DIR = REPO / "fairseq_tpr"
CONFIG_DIR = USER_DIR / "config"
VOCAB = [f"w{i}" for i in range(24)]
N = {"train": 48, "valid": 8, "test": 7}
SEED = 3
LANGS = ("-s", "src", "-t", "tgt")
HYDRA_LANGS = ("task.source_lang=src", "task.target_lang=tgt")

PLUGIN_ARCHS = sorted(a for a, fn in ARCH_CONFIG_REGISTRY.items() if fn.__module__.startswith("fairseq_tpr."))
PAPER_CONFIGS = sorted(p.stem for p in CONFIG_DIR.glob("*.yaml"))

# shipped config -> (data directory, fairseq-train flags that say what the config's task, criterion and
# model sections say)
_LS_ROLES = ("--criterion", "label_smoothed_cross_entropy_with_roles")
_MATH = ("text", ("--task", "translation", *LANGS, *_LS_ROLES, "--label-smoothing", "0.0", "--report-accuracy"))
_WMT = ("text", ("--task", "translation", *LANGS, *_LS_ROLES, "--label-smoothing", "0.1", "--share-all-embeddings",
                 "--dropout", "0.3"))
_SUMM = ("text", ("--task", "translation", *LANGS, "--truncate-source", *_LS_ROLES, "--label-smoothing", "0.1",
                  "--report-accuracy"))
_CAPTION = ("captions", ("--task", "image_captioning", "--criterion", "label_smoothed_cross_entropy",
                         "--label-smoothing", "0.1"))
_EXTRACT = ("extractive", ("--task", "extractive_summarization", "--max-units", "512", "--criterion", "extractive_bce",
                           "--pos-weight", "auto"))
_LM = ("lm", ("--task", "language_modeling", "--tokens-per-sample", "128", "--sample-break-mode", "none",
               "--criterion", "cross_entropy_with_roles"))
CONFIGS = {
    "tp_transformer_lm": _LM, "tp_transformer_d_lm": _LM, "transformer_lm_tp": _LM,
    "tp_transformer_math": _MATH, "transformer_tp_math": _MATH,
    "tp_transformer_wmt_en_de": _WMT, "transformer_tp_wmt_en_de": _WMT,
    "tp_transformer_d": _SUMM, "transformer_tp_d": _SUMM,
    "sttr_gigaword": ("text", ("--task", "template_summarization", *LANGS, "--truncate-source", "--criterion",
                               "label_smoothed_cross_entropy_with_template_mse", "--label-smoothing", "0.1",
                               "--template-mse-lambda", "1.0", "--report-accuracy")),
    "atpl_coco": _CAPTION, "nic": _CAPTION,
    "atpl_autoencoder": ("text", ("--task", "translation", *LANGS, "--criterion", "cross_entropy")),
    "discourse_synthesizer_base": _EXTRACT, "discourse_synthesizer_balanced": _EXTRACT,
}
# model (fairseq's --arch family) -> a non-default option: (config keys, fairseq-train flags)
OPTIONS = {
    "tp_transformer": ({"model": {"no_embedding_roles": True}}, ["--no-embedding-roles"]),
    "tp_transformer_d": ({"model": {"num_roles": 5}}, ["--num-roles", "5"]),
    "transformer": ({"model": {"encoder_layers": 1}}, ["--encoder-layers", "1"]),
    "tp_transformer_lm": ({"model": {"no_embedding_roles": True}}, ["--no-embedding-roles"]),
    "tp_transformer_d_lm": ({"model": {"num_roles": 5}}, ["--num-roles", "5"]),
    "transformer_lm_tp": ({"model": {"decoder_layers": 1}}, ["--decoder-layers", "1"]),
    "sttr": ({"model": {"template_mode": "concat", "tpr": "discrete"}, "criterion": {"template_mse_lambda": 0.0}},
             ["--template-mode", "concat", "--tpr", "discrete", "--template-mse-lambda", "0"]),  # no H_ts, no shifting loss
    "atpl": ({"model": {"share_filler_output_embed": True}}, ["--share-filler-output-embed"]),
    "nic": ({"model": {"decoder_hidden_size": 24}}, ["--decoder-hidden-size", "24"]),
    "atpl_autoencoder": ({"model": {"encoder_unidirectional": True}}, ["--encoder-unidirectional"]),
    "discourse_synthesizer": ({"model": {"attention": "dtree"}}, ["--attention", "dtree"]),
}
# archs of ~10M parameters or more (building them costs ~0.5 s each)
LARGE = {"tp_transformer_lm", "tp_transformer_d_lm", "transformer_lm_tp", "transformer_lm_tp_d", "tp_transformer", "tp_transformer_math", "tp_transformer_wmt_en_de", "tp_transformer_d", "transformer_tp_math",
         "transformer_tp_wmt_en_de", "transformer_tp_d", "sttr", "sttr_gigaword", "discourse_synthesizer",
         "discourse_synthesizer_base", "discourse_synthesizer_balanced"}
# left to `make test-slow`: the large archs other than the main paper presets (~2 s each with their compose)
SLOW = LARGE - {"tp_transformer_lm", "tp_transformer_d_lm", "tp_transformer_math", "tp_transformer_d", "sttr_gigaword", "discourse_synthesizer_base",
                "discourse_synthesizer_balanced"}


def config_of(arch):
    """The shipped config an arch is checked with: its own, else its family's."""
    if arch in CONFIGS:
        return arch
    for prefix, config in (("tp_transformer_d_lm", "tp_transformer_d_lm"), ("tp_transformer_lm", "tp_transformer_lm"),
                           ("transformer_lm_tp", "transformer_lm_tp"), ("tp_transformer_d", "tp_transformer_d"), ("tp_transformer", "tp_transformer_math"),
                           ("transformer_tp", "transformer_tp_math"), ("sttr", "sttr_gigaword"),
                           ("atpl_autoencoder", "atpl_autoencoder"), ("atpl", "atpl_coco"), ("nic", "nic"),
                           ("discourse_synthesizer", "discourse_synthesizer_base")):
        if arch.startswith(prefix):
            return config
    raise KeyError(arch)


# ----------------------------------------------------------------------------- data, written here
def _binarize(prefix, lines, d):
    builder = indexed_dataset.make_builder(f"{prefix}.bin", impl="mmap", vocab_size=len(d))
    for line in lines:
        builder.add_item(d.encode_line(line, add_if_not_exist=False).long())
    builder.finalize(f"{prefix}.idx")


def _dictionary(words):
    d = Dictionary()
    for w in words:
        d.add_symbol(w)
    d.finalize(padding_factor=1)
    return d


def write_text(root, rng):
    """Joined-dictionary src -> tgt (the source reversed) with a template per source; raw lines returned."""
    root.mkdir()
    d = _dictionary(VOCAB)
    for lang in ("src", "tgt"):
        d.save(str(root / f"dict.{lang}.txt"))
    raw = {}
    for split, n in N.items():
        src = [" ".join(rng.choice(VOCAB) for _ in range(rng.randint(3, 8))) for _ in range(n)]
        tpl = [" ".join(rng.choice(VOCAB) for _ in range(rng.randint(2, 5))) for _ in range(n)]
        raw[split] = {"src": src, "tgt": [" ".join(s.split()[::-1]) for s in src], "template": tpl}
        for lang, lines in raw[split].items():
            _binarize(root / f"{split}.src-tgt.{lang}", lines, d)
    return raw


def write_lm(root, rng):
    """A language-modelling directory (dict.txt, {split}.bin) of lines of 3-10 words."""
    root.mkdir()
    d = _dictionary(VOCAB)
    d.save(str(root / "dict.txt"))
    raw = {}
    for split, n in N.items():
        raw[split] = [" ".join(rng.choice(VOCAB) for _ in range(rng.randint(3, 10))) for _ in range(4 * n)]
        _binarize(root / split, raw[split], d)
    return raw


def write_captions(root, rng, dim=6):
    """Image features (dim) with 2 captions per image; valid/test have one item per image."""
    root.mkdir()
    d = _dictionary(VOCAB[:10])
    d.save(str(root / "dict.txt"))
    nrng = np.random.RandomState(SEED)
    for split, n in N.items():
        ids = [f"{split}{i}" for i in range(n)]
        np.save(root / f"{split}.feat.npy", nrng.randn(n, dim).astype(np.float32))
        (root / f"{split}.feat.ids").write_text("".join(f"{i}\n" for i in ids))
        caps = [(i, " ".join(rng.choice(VOCAB[:10]) for _ in range(rng.randint(2, 5)))) for i in ids for _ in range(2)]
        (root / f"{split}.img").write_text("".join(f"{i}\n" for i, _ in caps))
        _binarize(root / split, [c for _, c in caps], d)


def write_extractive(root, rng, dim=12):
    """Documents of 3-9 sentence units; every other document has an RST tree (bracketed text)."""
    root.mkdir()
    (root / "meta.json").write_text(json.dumps({"unit_dim": dim, "unit": "sentence", "encoder": "test"}))
    nrng = np.random.RandomState(SEED)
    docs = {}
    for split, n in N.items():
        writer, docs[split] = SplitWriter(root, split), []
        for k in range(n):
            units = [f"sentence {k}.{i} ." for i in range(rng.randint(3, 9))]
            tree = _bracketed(len(units)) if k % 2 == 0 else None
            vectors = nrng.randn(len(units), dim).astype(np.float32)
            nodes, parents = tree_to_arrays(parse_tree(tree, len(units)) if tree else right_branching_tree(len(units)))
            writer.add(vectors, [int(i < 2) for i in range(len(units))], nodes, parents, units, "reference .")
            docs[split].append((units, vectors, tree))
        writer.write()
    return docs


def _bracketed(n):
    """A left-branching RST tree over units 1..n (n >= 2) in the bracketed format."""
    def node(i, nuclearity):  # the constituent of units 1..i
        if i == 1:
            return f"({nuclearity} (leaf 1))"
        return f"({nuclearity} (span 1 {i}) {node(i - 1, 'Nucleus')} (Satellite (leaf {i})))"

    return f"(Root {node(n - 1, 'Nucleus')} (Satellite (leaf {n})))"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("hydra_hub")
    rng = random.Random(SEED)
    raw = write_text(root / "text", rng)
    write_captions(root / "captions", rng)
    docs = write_extractive(root / "extractive", rng)
    lm = write_lm(root / "lm", rng)
    return {"root": root, "text": root / "text", "captions": root / "captions", "extractive": root / "extractive",
            "lm": root / "lm", "raw": raw, "docs": docs, "lm_raw": lm}


# ----------------------------------------------------------------------------- the two ways to a config
def hydra_config(config, overrides):
    """The config fairseq-hydra-train's training loop gets for ``--config-name config`` + overrides:
    hydra_train.py (hydra_init, compose, add_defaults, resolve, struct), then fairseq_cli/train.py's
    own add_defaults (which leaves the config open: presets and builds may add keys)."""
    hydra_init(config)
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.1"):
        cfg = compose(config_name=config, overrides=list(overrides))
    add_defaults(cfg)
    with omegaconf_no_object_check():
        cfg = OmegaConf.create(OmegaConf.to_container(cfg, resolve=True, enum_to_str=True))
    OmegaConf.set_struct(cfg, True)
    add_defaults(cfg)
    return cfg


_COMPOSED = {}


def hydra_nodes(config, data_dir, keys):
    """``(task, model, criterion)`` of :func:`hydra_config` for a shipped config on ``data_dir`` with ``keys``
    (``{"model": {...}, "criterion": {...}}``) added as ``model.KEY=VALUE`` overrides would add them.
    Composing costs ~1.5 s, so each config is composed once and its three nodes are copied."""
    if config not in _COMPOSED:
        langs = HYDRA_LANGS if CONFIGS[config][0] == "text" else ()
        cfg = hydra_config(config, [f"task.data={data_dir}", *langs])
        _COMPOSED[config] = OmegaConf.to_container(OmegaConf.masked_copy(cfg, ["task", "model", "criterion"]))
    cfg = OmegaConf.merge(OmegaConf.create(_COMPOSED[config]), keys)
    return cfg.task, cfg.model, cfg.criterion


def train_nodes(*argv):
    """``(task, model, criterion)`` of fairseq-train's config for a command line: for legacy models
    ``convert_namespace_to_omegaconf`` makes each a copy of the argparse Namespace with ``_name`` and the
    registry's defaults (the rest of that conversion costs ~0.6 s and is not needed to build)."""
    from fairseq.criterions import CRITERION_REGISTRY
    from fairseq.dataclass.utils import _set_legacy_defaults
    from fairseq.models import ARCH_MODEL_REGISTRY
    from fairseq.tasks import TASK_REGISTRY

    args = options.parse_args_and_arch(options.get_training_parser(), [str(a) for a in argv])
    nodes = []
    for name, registry in ((args.task, TASK_REGISTRY), (args.arch, ARCH_MODEL_REGISTRY),
                           (args.criterion, CRITERION_REGISTRY)):
        node = Namespace(**vars(args))
        _set_legacy_defaults(node, registry[name])
        node._name = name
        nodes.append(node)
    return tuple(nodes)


def train_config(*argv):
    """All of fairseq-train's config for a command line."""
    args = options.parse_args_and_arch(options.get_training_parser(), [str(a) for a in argv])
    return convert_namespace_to_omegaconf(args)


def build_and_first_loss(task_cfg, model_cfg, criterion_cfg):
    """fairseq-train's first steps (task, seed, model, criterion) and the training loss of the first
    4 items of the train split, dropout on, the same seed before the forward pass."""
    task = tasks.setup_task(task_cfg)
    torch.manual_seed(SEED)
    model = task.build_model(model_cfg)
    criterion = task.build_criterion(criterion_cfg)
    task.load_dataset("train")
    dataset = task.dataset("train")
    sample = dataset.collater([dataset[i] for i in range(4)])
    model.train()
    torch.manual_seed(SEED + 1)
    loss, _, _ = criterion(model, sample)
    return model, loss.item()


def shapes(model):
    return {k: tuple(v.shape) for k, v in model.state_dict().items()}


def n_params(model):
    return sum(p.numel() for p in model.parameters())


def _arch_params():
    return [pytest.param(a, marks=pytest.mark.slow) if a in SLOW else a for a in PLUGIN_ARCHS]


@pytest.mark.parametrize("arch", _arch_params())
def test_hydra_config_builds_what_fairseq_train_builds(arch, data):
    """The arch's shipped config (its own for a paper preset, else its family's with model._name=arch)
    plus a non-default option, against fairseq-train's command line for the same settings."""
    config = config_of(arch)
    data_kind, train_flags = CONFIGS[config]
    keys, flags = OPTIONS[ARCH_MODEL_NAME_REGISTRY[arch]]
    keys = {"model": dict(keys["model"], _name=arch), **{k: v for k, v in keys.items() if k != "model"}}
    h_model, h_loss = build_and_first_loss(*hydra_nodes(config, data[data_kind], keys))
    a_model, a_loss = build_and_first_loss(*train_nodes(data[data_kind], "--arch", arch, *train_flags, *flags))
    assert shapes(h_model) == shapes(a_model)
    assert n_params(h_model) == n_params(a_model)
    assert h_model.max_positions() == a_model.max_positions()
    assert h_loss == pytest.approx(a_loss, rel=1e-6, abs=1e-6)
    if arch not in LARGE:  # the option is honoured: without it the model differs
        plain, _ = build_and_first_loss(*train_nodes(data[data_kind], "--arch", arch, *train_flags))
        assert shapes(plain) != shapes(h_model)


def test_every_plugin_arch_and_config_is_covered():
    assert len(PLUGIN_ARCHS) >= 26
    for arch in PLUGIN_ARCHS:
        assert config_of(arch) in CONFIGS
        assert ARCH_MODEL_NAME_REGISTRY[arch] in OPTIONS
    assert sorted(CONFIGS) == PAPER_CONFIGS
    for config in PAPER_CONFIGS:  # each paper config names its own preset
        assert OmegaConf.load(CONFIG_DIR / f"{config}.yaml").model._name == config


def test_setup_py_ships_the_configs():
    setup = (REPO / "pyproject.toml").read_text()
    assert '"config/*.yaml"' in setup and '"config/training/*.yaml"' in setup


def test_hydra_user_keys_win_and_preset_fills_the_rest(data):
    task_cfg, model_cfg, _ = hydra_nodes("tp_transformer_d", data["text"],
                                         {"model": {"_name": "tp_transformer_d_tiny", "num_roles": 5}})
    assert sorted(model_cfg) == ["_name", "num_roles"]
    model = tasks.setup_task(task_cfg).build_model(model_cfg)
    roles = model.encoder.layers[0].self_attn_roles.roles
    assert tuple(roles.shape) == (5, 16)  # num_roles from the user, role_dim from the preset
    assert len(model.encoder.layers) == 2
    # what the preset and the build filled in is in the config the trainer saves, as with fairseq-train
    assert model_cfg.num_roles == 5 and model_cfg.role_dim == 16 and model_cfg.encoder_layers == 2
    assert model_cfg.arch == "tp_transformer_d_tiny" and model_cfg.share_all_embeddings is True


@pytest.mark.parametrize("arch, keys, flags, limits", [
    ("tp_transformer_tiny", {"task": {"max_source_positions": 40, "max_target_positions": 30}},
     ("--max-source-positions", "40", "--max-target-positions", "30"), (40, 30)),
    ("atpl_tiny", {"task": {"max_target_positions": 30}}, ("--max-target-positions", "30"), 30),
])
def test_task_limits_reach_the_model_as_with_fairseq_train(arch, keys, flags, limits, data):
    """fairseq-train's flat Namespace hands the task's length limits to the model; under Hydra they are
    task.* keys, which the plugin's build_model takes over when the model config does not set them."""
    config = config_of(arch)
    data_kind, train_flags = CONFIGS[config]
    task_cfg, model_cfg, _ = hydra_nodes(config, data[data_kind], dict(keys, model={"_name": arch}))
    h_model = tasks.setup_task(task_cfg).build_model(model_cfg)
    task_cfg, model_cfg, _ = train_nodes(data[data_kind], "--arch", arch, *train_flags, *flags)
    a_model = tasks.setup_task(task_cfg).build_model(model_cfg)
    assert h_model.max_positions() == a_model.max_positions() == limits


# ----------------------------------------------------------------------------- one real fairseq-hydra-train
def _train_inner_losses(log):
    return [float(x) for x in re.findall(r"train_inner.*? loss=([\d.]+)", log)]


def _params(log):
    return re.search(r"num\. shared model params: ([\d,]+)", log).group(1)


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines = []

    def emit(self, record):
        self.lines.append(f"{record.name} | {record.getMessage()}")


def fairseq_train_in_process(*argv):
    """fairseq-train (its main, in this process, as cli_main calls it); returns the lines it logged."""
    from fairseq_cli import train

    cfg = train_config(*argv)
    records, root = _Records(), logging.getLogger()
    root.addHandler(records)
    level = root.level
    root.setLevel(logging.INFO)  # setLevel, not `root.level =`: it clears the loggers' cached isEnabledFor
    try:
        train.main(cfg)
    finally:
        root.removeHandler(records)
        root.setLevel(level)
    return "\n".join(records.lines)


@pytest.fixture(scope="module")
def cli_runs(data, run_cli):
    """fairseq-hydra-train with tp_transformer_d.yaml (tiny, +model.num_roles=5) in a subprocess and, meanwhile,
    fairseq-train with the same settings in this process; 3 updates each. Returns both logs."""
    root = data["root"]
    hydra_args = (
        "--config-dir", CONFIG_DIR, "--config-name", "tp_transformer_d", f"task.data={data['text']}", *HYDRA_LANGS,
        "model._name=tp_transformer_d_tiny", "+model.num_roles=5", f"common.user_dir={USER_DIR}", "common.cpu=true",
        "common.log_interval=1", "dataset.num_workers=0", "dataset.max_tokens=400", "optimization.max_update=3",
        f"checkpoint.save_dir={root / 'ckpt_hydra'}")
    (root / "cwd_hydra").mkdir()
    with ThreadPoolExecutor(1) as pool:
        hydra = pool.submit(run_cli, "fairseq-hydra-train", *hydra_args, cwd=root / "cwd_hydra")
        train_log = fairseq_train_in_process(
            data["text"], "--user-dir", USER_DIR, "--arch", "tp_transformer_d_tiny", "--num-roles", "5", *_SUMM[1],
            "--optimizer", "adafactor", "--scale-parameter", "--lr", "0.01", "--lr-scheduler", "inverse_sqrt",
            "--warmup-updates", "10000", "--warmup-init-lr", "0.01", "--max-tokens", "400",
            "--required-batch-size-multiple", "1", "--skip-invalid-size-inputs-valid-test", "--max-update", "3",
            "--seed", "1", "--cpu", "--num-workers", "0", "--log-format", "simple", "--log-interval", "1",
            "--save-dir", root / "ckpt_train", "--no-epoch-checkpoints")
        proc = hydra.result()
    return {"hydra": proc, "train": train_log}


def test_fairseq_hydra_train_runs_and_matches_fairseq_train(cli_runs, data):
    proc = cli_runs["hydra"]
    hydra_log, train_log = proc.stdout + proc.stderr, cli_runs["train"]
    assert proc.returncode == 0, f"fairseq-hydra-train failed:\n{hydra_log[-4000:]}"
    assert _params(hydra_log) == _params(train_log)
    losses = _train_inner_losses(hydra_log)
    assert len(losses) == 3 and losses == _train_inner_losses(train_log)
    saved = torch.load(data["root"] / "ckpt_hydra" / "checkpoint_last.pt")["cfg"]["model"]
    assert saved["num_roles"] == 5 and saved["role_dim"] == 16


LM_CONFIGS = {"tp_transformer_lm": ("tp_transformer_lm_tiny", ()),
              "tp_transformer_d_lm": ("tp_transformer_d_lm_tiny", ("--num-roles", "5")),
              "transformer_lm_tp": ("transformer_lm_tp_tiny", ())}


@pytest.fixture(scope="module")
def lm_cli_runs(data, run_cli):
    """Each LM config: fairseq-hydra-train (its tiny preset, 3 updates; subprocesses, two at a time) and,
    meanwhile, fairseq-train in this process with the settings of training/lm.yaml. config -> both logs."""
    root = data["root"]
    runs = {}
    with ThreadPoolExecutor(2) as pool:
        for config, (arch, flags) in LM_CONFIGS.items():
            (root / f"cwd_{config}").mkdir()
            keys = ["+model.num_roles=5"] if flags else []
            runs[config] = pool.submit(
                run_cli, "fairseq-hydra-train", "--config-dir", CONFIG_DIR, "--config-name", config,
                f"task.data={data['lm']}", f"model._name={arch}", *keys, f"common.user_dir={USER_DIR}",
                "common.cpu=true", "common.log_interval=1", "dataset.num_workers=0", "optimization.max_update=3",
                f"checkpoint.save_dir={root / f'ckpt_hydra_{config}'}", cwd=root / f"cwd_{config}")
        logs = {}
        for config, (arch, flags) in LM_CONFIGS.items():
            logs[config] = fairseq_train_in_process(
                data["lm"], "--user-dir", USER_DIR, "--arch", arch, *flags, *_LM[1], "--optimizer", "adam",
                "--adam-betas", "(0.9, 0.98)", "--adam-eps", "1e-8", "--lr", "0.002", "--lr-scheduler",
                "cosine", "--warmup-updates", "300", "--warmup-init-lr", "1e-7",
                "--max-tokens", "2048", "--required-batch-size-multiple", "1", "--max-update", "3", "--seed", "1",
                "--cpu", "--num-workers", "0", "--log-format", "simple", "--log-interval", "1",
                "--save-dir", root / f"ckpt_train_{config}", "--no-epoch-checkpoints")
        return {config: (runs[config].result(), logs[config]) for config in LM_CONFIGS}


@pytest.mark.parametrize("config", sorted(LM_CONFIGS))
def test_fairseq_hydra_train_of_the_lm_configs_matches_fairseq_train(config, lm_cli_runs, data):
    proc, train_log = lm_cli_runs[config]
    hydra_log = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"fairseq-hydra-train failed:\n{hydra_log[-4000:]}"
    assert _params(hydra_log) == _params(train_log)
    losses = _train_inner_losses(hydra_log)
    assert len(losses) == 3 and losses == _train_inner_losses(train_log)
    saved = torch.load(data["root"] / f"ckpt_hydra_{config}" / "checkpoint_last.pt", weights_only=False)["cfg"]
    assert saved["model"]["_name"] == LM_CONFIGS[config][0] and saved["model"]["max_target_positions"] == 128
    assert ("role_onehot=" in hydra_log) == (config == "tp_transformer_d_lm")  # in its train_inner lines


# ----------------------------------------------------------------------------- hub
def train_and_save(save_dir, *argv, updates=2):
    """``updates`` steps of fairseq's Trainer on the train split, saved by it as checkpoint_last.pt."""
    cfg = train_config(*argv, "--optimizer", "adam", "--lr", "3e-3", "--cpu", "--seed", str(SEED),
                       "--save-dir", save_dir, "--no-save-optimizer-state")
    task = tasks.setup_task(cfg.task)
    torch.manual_seed(SEED)
    model = task.build_model(cfg.model)
    trainer = Trainer(cfg, task, model, task.build_criterion(cfg.criterion))
    task.load_dataset("train")
    itr = task.get_batch_iterator(task.dataset("train"), max_sentences=8, required_batch_size_multiple=1,
                                  seed=SEED, num_workers=0).next_epoch_itr(shuffle=True)
    for _, sample in zip(range(updates), itr):
        assert trainer.train_step([sample]) is not None
    Path(save_dir).mkdir(parents=True, exist_ok=True)
    trainer.save_checkpoint(str(Path(save_dir) / "checkpoint_last.pt"), {})
    return Path(save_dir)


def _hyps(stdout):
    return {int(i): h for i, h in re.findall(r"^H-(\d+)\t\S+\t(.*)$", stdout, flags=re.M)}


def interactive(capsys, tmp_path, data_dir, ckpt_dir, lines, *extra):
    """fairseq-interactive (its main, in this process): hypothesis per input line."""
    from fairseq_cli import interactive as cli

    inp = tmp_path / "input.txt"
    inp.write_text("".join(line + "\n" for line in lines))
    args = options.parse_args_and_arch(options.get_interactive_generation_parser(), [
        str(data_dir), "--path", str(ckpt_dir / "checkpoint_last.pt"), "--input", str(inp), "--beam", "4",
        "--max-len-b", "12", "--cpu", "--buffer-size", "3", "--batch-size", "3", *extra])
    capsys.readouterr()
    cli.main(convert_namespace_to_omegaconf(args))
    hyps = _hyps(capsys.readouterr().out)
    assert sorted(hyps) == list(range(len(lines)))
    return [hyps[i] for i in range(len(lines))]


TEXT_ARCHS = {  # text to text: fairseq's GeneratorHubInterface
    "tp_transformer_tiny": ("--no-embedding-roles",),
    "transformer_tp_tiny": (),
    "atpl_autoencoder_tiny": (),
}


@pytest.mark.parametrize("arch", sorted(TEXT_ARCHS))
def test_hub_translate_equals_interactive_text_models(arch, data, tmp_path, capsys):
    ckpt = train_and_save(tmp_path / "ckpt", data["text"], "--task", "translation", *LANGS, "--arch", arch,
                          *TEXT_ARCHS[arch])
    lines = data["raw"]["test"]["src"]
    expected = interactive(capsys, tmp_path, data["text"], ckpt, lines, *LANGS)
    model = hub.from_pretrained(str(ckpt), "checkpoint_last.pt", str(data["text"]))
    assert type(model) is hub.GeneratorHubInterface
    assert model.translate(lines, beam=4, max_len_b=12) == expected


def test_hub_of_a_hydra_trained_checkpoint(cli_runs, data, tmp_path, capsys):
    """tp_transformer_d from fairseq-hydra-train (the saved model config is a dict, not a Namespace)."""
    ckpt = data["root"] / "ckpt_hydra"
    lines = data["raw"]["test"]["src"]
    expected = interactive(capsys, tmp_path, data["text"], ckpt, lines, *LANGS)
    from fairseq_tpr.models.tp_transformer_d import TPTransformerDModel

    model = TPTransformerDModel.from_pretrained(str(ckpt), "checkpoint_last.pt", str(data["text"]))
    assert model.models[0].encoder.layers[0].self_attn_roles.roles.shape[-2] == 5
    assert model.translate(lines, beam=4, max_len_b=12) == expected


def test_hub_sttr_summarize_and_translate_equal_interactive(data, tmp_path, capsys):
    ckpt = train_and_save(tmp_path / "ckpt", data["text"], "--task", "template_summarization", *LANGS,
                          "--arch", "sttr_tiny", "--criterion", "label_smoothed_cross_entropy_with_template_mse",
                          "--template-mse-lambda", "1")
    test = data["raw"]["test"]
    lines = [f"{d}\t{t}" for d, t in zip(test["src"], test["template"])]
    expected = interactive(capsys, tmp_path, data["text"], ckpt, lines, *LANGS, "--task", "template_summarization")
    from fairseq_tpr.models.sttr import STTRModel

    model = STTRModel.from_pretrained(str(ckpt), "checkpoint_last.pt", str(data["text"]))
    assert isinstance(model, hub.TemplateSummarizerHubInterface)
    assert model.summarize(test["src"], test["template"], beam=4, max_len_b=12) == expected
    assert model.translate(lines, beam=4, max_len_b=12) == expected
    assert model.summarize(test["src"][1], test["template"][1], beam=4, max_len_b=12) == expected[1]
    with pytest.raises(InputError, match="no tab"):
        model.translate(test["src"][0])
    with pytest.raises(ValueError, match="2 documents but 1 templates"):
        model.summarize(test["src"][:2], test["template"][:1])


@pytest.mark.parametrize("arch", ["atpl_tiny", "nic_tiny"])
def test_hub_caption_equals_generate(arch, data, tmp_path, capsys):
    from fairseq_cli import generate

    ckpt = train_and_save(tmp_path / "ckpt", data["captions"], "--task", "image_captioning", "--arch", arch,
                          "--criterion", "cross_entropy")
    args = options.parse_args_and_arch(options.get_generation_parser(), [
        str(data["captions"]), "--task", "image_captioning", "--path", str(ckpt / "checkpoint_last.pt"),
        "--gen-subset", "test", "--beam", "3", "--max-len-b", "10", "--batch-size", "4",
        "--required-batch-size-multiple", "1", "--cpu", "--num-workers", "0"])
    capsys.readouterr()
    generate.main(convert_namespace_to_omegaconf(args))
    expected = _hyps(capsys.readouterr().out)  # test item i is image row i (one item per image)
    features = np.load(data["captions"] / "test.feat.npy")
    assert sorted(expected) == list(range(len(features)))
    model = hub.from_pretrained(str(ckpt), "checkpoint_last.pt", str(data["captions"]))
    assert isinstance(model, hub.CaptionerHubInterface)
    assert model.caption(features, beam=3, max_len_b=10) == [expected[i] for i in range(len(features))]
    assert model.caption(features[2], beam=3, max_len_b=10) == expected[2]
    # a model directory holding only the checkpoint and dict.txt: the feature size comes from the checkpoint
    (ckpt / "dict.txt").write_text((data["captions"] / "dict.txt").read_text())
    bare = hub.from_pretrained(str(ckpt), "checkpoint_last.pt")
    assert bare.caption(features[:3], beam=3, max_len_b=10) == [expected[i] for i in range(3)]
    with pytest.raises(TypeError, match="caption"):
        model.translate("a b c")
    with pytest.raises(ValueError, match="6-d image features"):
        model.caption(features[:, :4])


def test_hub_extractive_equals_fairseq_tpr_extract(data, tmp_path):
    from fairseq_tpr.cli.extract import main as extract_main
    from fairseq_tpr.models.discourse_synthesizer import DiscourseSynthesizerModel

    ckpt = train_and_save(tmp_path / "ckpt", data["extractive"], "--task", "extractive_summarization",
                          "--arch", "discourse_synthesizer_tiny", "--attention", "ctree", "--criterion", "extractive_bce")
    out, selected = tmp_path / "summaries.txt", tmp_path / "selected.jsonl"
    assert extract_main(["--data", str(data["extractive"]), "--path", str(ckpt / "checkpoint_last.pt"),
                         "--out", str(out), "--selected", str(selected), "--k", "2", "--batch-size", "3"]) == 0
    expected = [json.loads(line) for line in selected.read_text().splitlines()]
    summaries = out.read_text().splitlines()
    model = DiscourseSynthesizerModel.from_pretrained(str(ckpt), "checkpoint_last.pt", str(data["extractive"]))
    assert isinstance(model, hub.ExtractiveHubInterface)
    docs = data["docs"]["test"]
    assert any(tree for _, _, tree in docs) and any(tree is None for _, _, tree in docs)
    for (units, vectors, tree), chosen, summary in zip(docs, expected, summaries):
        rb = tree is None  # the data gave these documents right-branching trees
        assert model.extract(vectors, k=2, tree=tree, right_branching=rb) == chosen
        assert model.summarize(units, vectors, k=2, tree=tree, right_branching=rb) == summary
        assert model.score_units(vectors, tree, right_branching=rb).shape == (len(units),)
    units, vectors, tree = docs[0]
    assert tree is not None and not np.allclose(model.score_units(vectors, tree),
                                                model.score_units(vectors, right_branching=True))
    assert len(model.extract(vectors, right_branching=True)) == 3  # default k: 3 sentence units
    # a missing tree is an error unless the right-branching placeholder is asked for by name
    for call in (lambda: model.score_units(vectors), lambda: model.extract(vectors),
                 lambda: model.summarize(units, vectors)):
        with pytest.raises(ConfigError, match="right_branching=True"):
            call()
    with pytest.raises(ConfigError, match="not both"):
        model.score_units(vectors, tree, right_branching=True)
    # the D-Tree parents follow the conversion the training data used (meta.json): on this tree
    # Hirao's (climb to the nearest satellite) and Li's conversions give different parents
    from fairseq_tpr.corpora.rst_trees import parse_tree
    from fairseq_tpr.modules.tree_attention import dependency_parents

    multinuclear_satellite = ("( Root (span 1 3)\n ( Satellite (span 1 2) (rel2par Background)\n"
                              "  ( Nucleus (leaf 1) (rel2par Joint) )\n  ( Nucleus (leaf 2) (rel2par Joint) ) )\n"
                              " ( Nucleus (leaf 3) (rel2par span) ) )\n")
    root = parse_tree(multinuclear_satellite, 3)
    assert dependency_parents(root, "hirao").tolist() != dependency_parents(root, "li").tolist()
    for conversion in ("hirao", "li"):
        model.task.meta["dependency_conversion"] = conversion
        parents = model._batch(vectors[:3], multinuclear_satellite)["net_input"]["dep_parents"][0].tolist()
        assert parents == dependency_parents(root, conversion).tolist()
    model.task.meta["dependency_conversion"] = "hirao"
    with pytest.raises(TypeError, match="extractive"):
        model.translate("a b")
    with pytest.raises(ValueError, match="12"):
        model.score_units(vectors[:, :5])
