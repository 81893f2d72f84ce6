"""Data-parallel training on vkml with torch.distributed: DistributedDataParallel over the "vkml"
process-group backend (vkml_torch.distributed: gloo underneath, tensors staged through host memory).

On one machine, two processes:
    torchrun --nproc_per_node=2 examples/ddp_train.py
    python examples/ddp_train.py --spawn 2          (the same without torchrun)
Across machines (each runs one process per vkml device it uses; gloo talks TCP):
    torchrun --nnodes=2 --node_rank=0 --nproc_per_node=1 --master_addr=HOST0 --master_port=29500 examples/ddp_train.py
    torchrun --nnodes=2 --node_rank=1 --nproc_per_node=1 --master_addr=HOST0 --master_port=29500 examples/ddp_train.py
Every rank trains on its own shard of one synthetic data set; the result equals a single process
training on the whole set with the same seed (see train(world_size=1)) to float32 rounding.
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import vkml_torch  # noqa: F401  (registers the device and the "vkml" process-group backend)


def data(n=64, seed=1):
    """The whole data set: n samples of a noisy linear 2-class problem."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 10, generator=g)
    y = (x[:, :3].sum(1) + 0.1 * torch.randn(n, generator=g) > 0).long()
    return x, y


def model(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 2))


def train(rank=0, world_size=1, steps=5, lr=0.1, device=None):
    """Trains model() for `steps` full-batch steps on this rank's shard of data() and returns the
    final parameters (CPU tensors). With world_size > 1 the process group must be initialised.
    Shards are equal, so DDP's mean of the ranks' gradients is the whole batch's gradient."""
    device = torch.device(device or "vkml")
    x, y = data()
    shard = x.shape[0] // world_size
    x, y = x[rank * shard:(rank + 1) * shard].to(device), y[rank * shard:(rank + 1) * shard].to(device)
    net = model().to(device)
    if world_size > 1:
        net = nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
    mod = net.module if world_size > 1 else net
    return [p.detach().cpu() for p in mod.parameters()]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--spawn", type=int, default=0, help="start this many local processes (no torchrun)")
    ap.add_argument("--out", help="rank 0 saves the final parameters here (torch.save)")
    a = ap.parse_args(argv)
    if a.spawn:
        import subprocess
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(a.spawn))
        args = [sys.executable, os.path.abspath(__file__), "--steps", str(a.steps)] + (["--out", a.out] if a.out else [])
        procs = [subprocess.Popen(args, env=dict(env, RANK=str(r), LOCAL_RANK=str(r))) for r in range(a.spawn)]
        return max(p.wait() for p in procs)
    # torchrun (or --spawn) sets MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE and LOCAL_RANK.
    dist.init_process_group("vkml")  # gloo over TCP, vkml tensors staged through the host
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", 0))
    torch.vkml.set_device(local % torch.vkml.device_count())  # one device per local process
    params = train(rank, world, a.steps)
    if rank == 0:
        single = train(0, 1, a.steps)  # the single-process run on the whole data set
        diff = max((p - q).abs().max().item() for p, q in zip(params, single))
        print(f"{world} processes, {a.steps} steps: max |DDP - single process| = {diff:.3g}")
        if a.out:
            torch.save({"ddp": params, "single": single}, a.out)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
