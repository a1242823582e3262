"""Data-parallel training on CPU (the launch fixes of ``fairseq_tpr/fairseq_fixes/``).

End to end: 2 processes x ``--max-tokens 100`` must follow 1 process x ``--max-tokens 100
--update-freq 2`` to 1e-5 in every per-update loss and every final parameter (dropout 0). The
batches are the same: fairseq orders the epoch's batches (one seed for every rank), worker i of
2 takes batches i, i+2, ... (``ShardedIterator``), and ``--update-freq 2`` groups batches 2k and
2k+1 into update k. So is the gradient: each worker scales its gradient by world size / (sample
size summed over the workers) and DDP averages over the workers, which gives the sum of both
batches' gradients over their summed sample size, what one process computes for its two batches.

fairseq rounds the logged stats (``safe_round`` to 3 decimals, then ``"{:g}"``), so every train
run goes through ``_TRAIN``: what the ``fairseq-train`` console script runs (``cli_main``), with
rounding off. Launches: torchrun (``torchrun --standalone --nproc_per_node 2``), and (slow)
fairseq's own spawn with ``--cpu --distributed-world-size 2 --distributed-init-method tcp://...``,
which used to exit 0 having trained nothing.

The unit tests below each fail without one fix: ``fix_torchrun_without_cuda``,
``cpu_distributed_launch``, ``fix_ddp_device_ids_on_cpu``.
"""
import json
import logging
import re
import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import fairseq_tpr  # noqa: F401  (registered, fixes applied, by conftest.py)
from fairseq_tpr.errors import FairseqTprError

USER_DIR = Path(__file__).resolve().parents[1] / "fairseq_tpr"
D_ARCH, C_ARCH = "tp_transformer_d_tiny", "tp_transformer_tiny"
MAX_UPDATE = 4  # 64 sentences in batches of 8: 8 batches, 2 per update
TOL = 1e-5

# fairseq-train with the logged stats unrounded. Top level: the patch must also run in the
# processes that torch.multiprocessing.spawn starts (they import this file as __mp_main__).
_TRAIN = '''\
import sys
from fairseq.logging import meters, progress_bar

meters.safe_round = lambda number, ndigits: number.item() if hasattr(number, "item") else number
_format_stat = progress_bar.format_stat
progress_bar.format_stat = lambda stat: repr(stat) if isinstance(stat, float) else _format_stat(stat)

if __name__ == "__main__":  # what the fairseq-train console script does
    from fairseq_cli.train import cli_main

    sys.exit(cli_main())
'''


def _free_port():
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]


def _out(proc):
    return proc.stdout + "\n" + proc.stderr


def _ok(proc, what):
    assert proc.returncode == 0, f"{what} failed (rc {proc.returncode}):\n{_out(proc)[-6000:]}"
    return _out(proc)


@pytest.fixture(scope="module")
def train(tmp_path_factory, run_cli):
    """``train(name, arch, *extra, launch=("python",))`` starts a training run of the reversal
    task (64 sentences) in the background; ``.result()`` gives ``(process, save_dir)``."""
    root = tmp_path_factory.mktemp("distributed_cpu")
    _ok(run_cli("python", "-m", "fairseq_tpr.corpora.synthetic", root / "raw", "--train", 64, "--valid", 4,
                "--test", 4, cwd=root), "synthetic data")
    _ok(run_cli("fairseq-preprocess", "--source-lang", "src", "--target-lang", "tgt", "--trainpref",
                root / "raw" / "train", "--destdir", root / "bin", "--joined-dictionary", "--workers", "1",
                cwd=root), "fairseq-preprocess")
    script = root / "train.py"
    script.write_text(_TRAIN)

    def start(name, arch, *extra, launch=("python",)):
        args = (
            root / "bin", "--user-dir", USER_DIR, "--task", "translation", "--source-lang", "src",
            "--target-lang", "tgt", "--arch", arch, "--dropout", "0", "--criterion",
            "label_smoothed_cross_entropy_with_roles", "--optimizer", "adam", "--lr", "1e-3",
            "--max-tokens", "100", "--max-update", MAX_UPDATE, "--disable-validation",
            "--save-dir", root / name, "--no-epoch-checkpoints", "--cpu", "--seed", "1",
            "--num-workers", "0", "--log-format", "json", "--log-interval", "1", *extra,
        )
        return pool.submit(lambda: (run_cli(*launch, script, *args, cwd=root, timeout=600), root / name))

    with ThreadPoolExecutor(2) as pool:
        yield start


@pytest.fixture(scope="module")
def runs(train):
    """The reference runs (1 process, --update-freq 2) and the torchrun runs, by name."""
    torchrun = ("torchrun", "--standalone", "--nproc_per_node", "2")
    jobs = {f"one[{arch}]": train(f"one_{arch}", arch, "--update-freq", "2") for arch in (C_ARCH, D_ARCH)}
    jobs[f"torchrun[{C_ARCH}]"] = train("torchrun_c", C_ARCH, "--distributed-world-size", "2", launch=torchrun)
    # no --distributed-world-size: taken from torchrun (fairseq's default, 1 on CPU, trained alone)
    jobs[f"torchrun[{D_ARCH}]"] = train("torchrun_d", D_ARCH, launch=torchrun)
    return {name: job.result() for name, job in jobs.items()}


def _losses(proc, what):
    log = _ok(proc, what)
    records = [json.loads(m) for m in re.findall(r"train_inner\W+(\{.*\})\s*$", log, flags=re.M)]
    assert [int(r["num_updates"]) for r in records] == list(range(1, MAX_UPDATE + 1)), log[-4000:]
    return [float(r["loss"]) for r in records], log


def _params(save_dir):
    state = torch.load(save_dir / "checkpoint_last.pt")
    assert state["optimizer_history"][-1]["num_updates"] == MAX_UPDATE
    return state["model"]


def _assert_follows(run, reference, what):
    (proc, save_dir), (ref_proc, ref_dir) = run, reference
    losses, log = _losses(proc, what)
    ref_losses, _ = _losses(ref_proc, "the 1-process reference")
    assert "training on 2 devices" in log and "distributed init (rank 1)" in log, log[-4000:]
    assert any(round(x, 3) != x for x in ref_losses), ref_losses  # fairseq's rounding is off
    assert max(abs(a - b) for a, b in zip(losses, ref_losses)) <= TOL, (losses, ref_losses)
    params, ref_params = _params(save_dir), _params(ref_dir)
    assert params.keys() == ref_params.keys()
    worst = max((params[k].double() - ref_params[k].double()).abs().max().item() for k in params)
    assert worst <= TOL, f"largest parameter difference {worst}"


@pytest.mark.slow  # torchrun of two processes per arch: about 35 s
@pytest.mark.parametrize("arch", (C_ARCH, D_ARCH))
def test_torchrun_two_processes_follow_update_freq_two(arch, runs):
    _assert_follows(runs[f"torchrun[{arch}]"], runs[f"one[{arch}]"], f"torchrun --nproc_per_node 2 ({arch})")


@pytest.mark.slow
def test_fairseq_spawn_on_cpu_trains(train, runs):
    """``--cpu --distributed-world-size 2 --distributed-init-method tcp://...`` used to start
    min(GPUs, 2) = 0 processes and exit 0 (the fast check: test_cpu_spawn_starts_every_rank)."""
    spawn = train("spawn", C_ARCH, "--distributed-world-size", "2",
                  "--distributed-init-method", f"tcp://localhost:{_free_port()}").result()
    _assert_follows(spawn, runs[f"one[{C_ARCH}]"], "fairseq's spawn on CPU")


# unit tests, one per fix


@pytest.fixture
def full_cfg():
    from fairseq.dataclass.configs import FairseqConfig
    from omegaconf import OmegaConf

    cfg = OmegaConf.structured(FairseqConfig())
    cfg.common.cpu, cfg.model = True, None
    return cfg


@pytest.fixture
def torchrun_env(monkeypatch):
    for key, value in {"MASTER_ADDR": "localhost", "MASTER_PORT": "29999", "WORLD_SIZE": "2", "RANK": "1",
                       "LOCAL_RANK": "1"}.items():
        monkeypatch.setenv(key, value)


def _no_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)

    def set_device(device):
        raise AssertionError(f"torch.cuda.set_device({device}) without CUDA")

    monkeypatch.setattr(torch.cuda, "set_device", set_device)


def test_torchrun_launch_without_cuda(torchrun_env, monkeypatch):
    """fix_torchrun_without_cuda: fairseq divided the rank by torch.cuda.device_count()."""
    from fairseq.dataclass.configs import DistributedTrainingConfig
    from fairseq.distributed import utils as distributed_utils

    _no_cuda(monkeypatch)
    cfg = DistributedTrainingConfig(distributed_world_size=2, device_id=1, tpu=False)  # device_id: $LOCAL_RANK
    distributed_utils.infer_init_method(cfg)
    assert (cfg.distributed_init_method, cfg.distributed_rank, cfg.distributed_world_size) == ("env://", 1, 2)
    assert cfg.device_id == 0 and cfg.distributed_no_spawn


def test_torchrun_on_cpu_takes_world_size_and_gloo(full_cfg, torchrun_env, monkeypatch):
    """cpu_distributed_launch: without --distributed-world-size fairseq trained in every
    torchrun process alone, with nccl as the backend."""
    from fairseq.distributed import utils as distributed_utils

    _no_cuda(monkeypatch)
    started = []
    monkeypatch.setattr(distributed_utils, "distributed_main",
                        lambda device_id, main, cfg, kwargs: started.append((device_id, cfg)))
    distributed_utils.call_main(full_cfg, lambda cfg: pytest.fail("trained without the other rank"))
    [(device_id, cfg)] = started
    dt = cfg.distributed_training
    assert (dt.distributed_world_size, dt.distributed_rank, dt.distributed_init_method) == (2, 1, "env://")
    assert device_id == 0 and dt.distributed_backend == "gloo"


def test_cpu_spawn_starts_every_rank(full_cfg, monkeypatch):
    """cpu_distributed_launch: fairseq spawned min(GPUs, world size) = 0 processes."""
    from fairseq.distributed import utils as distributed_utils

    spawned = []
    monkeypatch.setattr(torch.multiprocessing, "spawn", lambda fn, args, nprocs, join: spawned.append(nprocs))
    full_cfg.distributed_training.distributed_world_size = 2
    full_cfg.distributed_training.distributed_init_method = "tcp://localhost:29999"
    distributed_utils.call_main(full_cfg, lambda cfg: pytest.fail("trained without the other rank"))
    assert spawned == [2]
    assert full_cfg.distributed_training.distributed_backend == "gloo"
    # a start rank other than 0: the other ranks are on another node, which spawn cannot reach
    full_cfg.distributed_training.distributed_rank = 2
    full_cfg.distributed_training.distributed_world_size = 4
    with pytest.raises(FairseqTprError, match=r"--distributed-rank 2.*torchrun --nproc_per_node"):
        distributed_utils.call_main(full_cfg, lambda cfg: pytest.fail("trained without the other ranks"))
    assert spawned == [2]


def test_gloo_on_cpu_in_one_process(full_cfg, tmp_path):
    """cpu_distributed_launch: --cpu with an init method initialized nccl (no CPU tensors)."""
    import torch.distributed as dist
    from fairseq.distributed import utils as distributed_utils

    dt = full_cfg.distributed_training
    dt.distributed_world_size, dt.distributed_no_spawn = 1, True
    dt.distributed_init_method = f"file://{tmp_path / 'store'}"
    seen = []
    level = logging.getLogger().level
    try:
        distributed_utils.call_main(full_cfg, lambda cfg: seen.append(dist.get_backend()))
    finally:
        logging.getLogger().setLevel(level)  # fairseq's distributed_init sets it
        if dist.is_initialized():
            dist.destroy_process_group()
    assert seen == ["gloo"]


def test_pytorch_ddp_wraps_a_cpu_model(tmp_path):
    """fix_ddp_device_ids_on_cpu: --ddp-backend pytorch_ddp gave torch's DDP device_ids for a
    CPU model, which torch refuses."""
    import torch.distributed as dist
    from fairseq.models import DistributedFairseqModel

    args = SimpleNamespace(tpu=False, ddp_backend="pytorch_ddp", device_id=1, broadcast_buffers=False,
                           bucket_cap_mb=25, find_unused_parameters=False, gradient_as_bucket_view=False,
                           ddp_comm_hook="none", heartbeat_timeout=-1)
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        model = DistributedFairseqModel(args, torch.nn.Linear(3, 2), process_group=None, device=torch.device("cpu"))
        model(torch.ones(4, 3)).sum().backward()
        assert model.weight.grad is not None
    finally:
        dist.destroy_process_group()
