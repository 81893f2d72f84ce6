"""One rank of test/test_distributed.py: collectives on vkml tensors through the "vkml" backend,
then DDP training; writes its findings (torch.save) to argv's --out. Results are compared with
what the collective must give, computed on the CPU."""
import argparse
import os
import sys
import traceback

import torch
import torch.distributed as dist
import vkml_torch  # noqa: F401

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import ddp_train  # noqa: E402


def rank_tensor(r, dtype, n=6):
    return (torch.arange(n) * (r + 1) - 2).to(dtype)


def collectives(rank, world):
    dev = torch.device("vkml")
    done = []
    for dtype in [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32]:
        want = sum(rank_tensor(r, torch.float64) for r in range(world)).to(dtype)
        t = rank_tensor(rank, dtype).to(dev)
        out = dist.all_reduce(t)
        assert out is None and t.device.type == "vkml" and t.dtype == dtype
        assert torch.equal(t.cpu(), want), (dtype, t.cpu(), want)
        done.append(f"all_reduce {dtype}")
    # a strided view is reduced in place, the rest of its base untouched
    base = torch.zeros(4, 6, device=dev)
    view = base[:, ::2]
    view.copy_(torch.full((4, 3), float(rank + 1)))
    dist.all_reduce(view, op=dist.ReduceOp.MAX)
    assert torch.equal(base.cpu()[:, ::2], torch.full((4, 3), float(world))) and base.cpu()[:, 1::2].eq(0).all()
    done.append("all_reduce strided MAX")
    t = rank_tensor(rank, torch.float32).to(dev)
    dist.broadcast(t, src=1)
    assert torch.equal(t.cpu(), rank_tensor(1, torch.float32))
    done.append("broadcast")
    outs = [torch.empty(6, device=dev) for _ in range(world)]
    dist.all_gather(outs, rank_tensor(rank, torch.float32).to(dev))
    for r, o in enumerate(outs):
        assert o.device.type == "vkml" and torch.equal(o.cpu(), rank_tensor(r, torch.float32))
    big = torch.empty(world * 6, device=dev)
    dist.all_gather_into_tensor(big, rank_tensor(rank, torch.float32).to(dev))
    assert torch.equal(big.cpu(), torch.cat([rank_tensor(r, torch.float32) for r in range(world)]))
    done.append("all_gather")
    ins = [rank_tensor(rank, torch.float32, 4) + 10 * k for k in range(world)]
    out = torch.empty(4, device=dev)
    dist.reduce_scatter(out, [i.to(dev) for i in ins])
    want = sum(rank_tensor(r, torch.float32, 4) + 10 * rank for r in range(world))
    assert torch.equal(out.cpu(), want), (out.cpu(), want)
    out2 = torch.empty(4, device=dev)
    dist.reduce_scatter_tensor(out2, torch.cat(ins).to(dev))
    assert torch.equal(out2.cpu(), want)
    done.append("reduce_scatter")
    outs = [torch.empty(6, device=dev) for _ in range(world)] if rank == 0 else None
    dist.gather(rank_tensor(rank, torch.float32).to(dev), outs, dst=0)
    if rank == 0:
        assert all(torch.equal(o.cpu(), rank_tensor(r, torch.float32)) for r, o in enumerate(outs))
    if hasattr(dist, "gather_single"):  # torch >= 2.15
        big = torch.full((world * 6,), -1.0, device=dev) if rank == 1 else None
        dist.gather_single(rank_tensor(rank, torch.float32).to(dev), big, dst=1)
        if rank == 1:
            assert torch.equal(big.cpu(), torch.cat([rank_tensor(r, torch.float32) for r in range(world)]))
        done.append("gather_single")
    t = torch.empty(6, device=dev)
    dist.scatter(t, [rank_tensor(r, torch.float32).to(dev) for r in range(world)] if rank == 0 else None, src=0)
    assert torch.equal(t.cpu(), rank_tensor(rank, torch.float32))
    done.append("gather, scatter")
    w = dist.all_reduce(torch.ones(3, device=dev), async_op=True)
    w.wait()
    dist.barrier()
    done.append("barrier, async_op")
    return done


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=4)
    a = ap.parse_args()
    rank = int(os.environ["RANK"])
    result = {"rank": rank}
    try:
        dist.init_process_group("vkml")
        world = dist.get_world_size()
        result["backend"] = dist.get_backend()
        result["collectives"] = collectives(rank, world)
        result["ddp"] = ddp_train.train(rank, world, a.steps)
        dist.barrier()
        dist.destroy_process_group()
    except BaseException:
        result["error"] = traceback.format_exc()
    torch.save(result, a.out)
    return 1 if "error" in result else 0


if __name__ == "__main__":
    sys.exit(main())
