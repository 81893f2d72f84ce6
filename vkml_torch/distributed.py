"""torch.distributed for vkml tensors: the "vkml" process-group backend, gloo underneath.

``import vkml_torch`` registers it, so ``torch.distributed.init_process_group("vkml", ...)`` (or
no backend at all: it is the default for the vkml device) works in processes whose tensors live on
vkml. There is no transport of our own: every collective stages its vkml tensors through host
memory (a copy to the CPU, gloo's collective on the copies, a copy back in place) on a gloo process
group made from the same store; CPU tensors go to gloo as they are. Collectives complete before
they return (the Work is already done), so ``async_op=True`` gives no overlap.

What works: all_reduce, broadcast, all_gather (lists and into one tensor), reduce_scatter (lists
and from one tensor), reduce, gather, scatter, all_to_all_single, barrier, send/recv, and
DistributedDataParallel on top of them. Reductions sum on the host in gloo's order, so results are
gloo's: deterministic for a fixed world size.
"""
import datetime

__all__ = ["VkmlProcessGroup", "register"]

import torch
import torch.distributed as dist
from torch.futures import Future

try:
    from torch._C import _distributed_c10d as _c10d
    from torch._C._distributed_c10d import _create_work_from_future
except ImportError:  # pragma: no cover (torch without distributed)
    _c10d = _create_work_from_future = None


def _opts(opts, kind, **fields):
    """opts, or torch's default options object of that kind ("AllreduceOptions") with fields set."""
    if opts is None:
        opts = getattr(_c10d, kind)()
    for k, v in fields.items():
        setattr(opts, k, v)
    return opts


def _on_vkml(t):
    return t.device.type == "vkml"


def _host(t):
    """A CPU tensor to hand gloo: t itself when already on the CPU, else a contiguous copy."""
    return t.detach().to("cpu").contiguous() if _on_vkml(t) else t


def _done(result):
    fut = Future()
    fut.set_result(result)
    return _create_work_from_future(fut)


def _back(dst, host):
    """Writes gloo's result back into dst (a no-op when gloo worked on dst itself)."""
    if host is not dst:
        with torch.no_grad():
            dst.copy_(host)


class VkmlProcessGroup(dist.ProcessGroup):
    """A process group whose collectives accept vkml tensors: each one runs gloo's collective on
    host copies (self.gloo, a ProcessGroupGloo over the same store) and copies the results back."""

    def __init__(self, store, rank, world_size, timeout):
        super().__init__(rank, world_size)
        self.gloo = dist.ProcessGroupGloo(store, rank, world_size, timeout)
        self._rank, self._world = rank, world_size

    # --- the collectives -------------------------------------------------------------------
    def allreduce(self, tensors, opts=None):
        opts = _opts(opts, "AllreduceOptions")
        hosts = [_host(t) for t in tensors]
        self.gloo.allreduce(hosts, opts).wait()
        for t, h in zip(tensors, hosts):
            _back(t, h)
        return _done(tensors)

    def allreduce_coalesced(self, tensors, opts=None):
        opts = _opts(opts, "AllreduceCoalescedOptions")
        o = _opts(None, "AllreduceOptions", reduceOp=opts.reduceOp)
        for t in tensors:
            self.allreduce([t], o)
        return _done(tensors)

    def broadcast(self, tensors, opts=None):
        opts = _opts(opts, "BroadcastOptions")
        hosts = [_host(t) for t in tensors]
        self.gloo.broadcast(hosts, opts).wait()
        for t, h in zip(tensors, hosts):
            _back(t, h)
        return _done(tensors)

    def allgather(self, output_lists, inputs, opts=None):
        opts = _opts(opts, "AllgatherOptions")
        outs = [[torch.empty_like(o, device="cpu") for o in outs] for outs in output_lists]
        self.gloo.allgather(outs, [_host(t) for t in inputs], opts).wait()
        for dsts, hosts in zip(output_lists, outs):
            for d, h in zip(dsts, hosts):
                _back(d, h)
        return _done(output_lists)

    def _allgather_base(self, output, input, opts=None):
        opts = _opts(opts, "AllgatherOptions")
        out = torch.empty_like(output, device="cpu")
        self.gloo._allgather_base(out, _host(input), opts).wait()
        _back(output, out)
        return _done([output])

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        opts = _opts(opts, "AllgatherOptions")
        for o, i in zip(outputs, inputs):
            self._allgather_base(o, i, opts)
        return _done(outputs)

    def reduce_scatter(self, outputs, input_lists, opts=None):
        opts = _opts(opts, "ReduceScatterOptions")
        # gloo's reduce_scatter sums rank by rank as its allreduce does; staged through one
        # allreduce of the stacked inputs where gloo lacks it (the result is the same sum).
        for out, ins in zip(outputs, input_lists):
            stacked = torch.stack([_host(t) for t in ins])
            self.gloo.allreduce([stacked], _opts(None, "AllreduceOptions", reduceOp=opts.reduceOp)).wait()
            _back(out, stacked[self._rank])
        return _done(outputs)

    def _reduce_scatter_base(self, output, input, opts=None):
        opts = _opts(opts, "ReduceScatterOptions")
        return self.reduce_scatter([output], [list(input.chunk(self._world))], opts)

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts=None):
        opts = _opts(opts, "ReduceScatterOptions")
        for o, i in zip(outputs, inputs):
            self._reduce_scatter_base(o, i, opts)
        return _done(outputs)

    def reduce(self, tensors, opts=None):
        opts = _opts(opts, "ReduceOptions")
        hosts = [_host(t) for t in tensors]
        self.gloo.reduce(hosts, opts).wait()
        if self._rank == opts.rootRank:
            for t, h in zip(tensors, hosts):
                _back(t, h)
        return _done(tensors)

    def gather(self, output_lists, inputs, opts=None):
        opts = _opts(opts, "GatherOptions")
        outs = [[torch.empty_like(o, device="cpu") for o in outs] for outs in output_lists]
        self.gloo.gather(outs, [_host(t) for t in inputs], opts).wait()
        for dsts, hosts in zip(output_lists, outs):
            for d, h in zip(dsts, hosts):
                _back(d, h)
        return _done(output_lists)

    def scatter(self, outputs, input_lists, opts=None):
        opts = _opts(opts, "ScatterOptions")
        hosts = [torch.empty_like(t, device="cpu") for t in outputs]
        self.gloo.scatter(hosts, [[_host(t) for t in ins] for ins in input_lists], opts).wait()
        for t, h in zip(outputs, hosts):
            _back(t, h)
        return _done(outputs)

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        opts = _opts(opts, "AllToAllOptions")
        out = torch.empty_like(output, device="cpu")
        self.gloo.alltoall_base(out, _host(input), output_split_sizes, input_split_sizes, opts).wait()
        _back(output, out)
        return _done([output])

    # The names torch 2.13 and later call (the older ones stay for torch 2.11-2.12).
    def all_gather_single(self, output, input, opts=None):
        return self._allgather_base(output, input, opts)

    def all_gather_single_coalesced(self, outputs, inputs, opts=None):
        return self.allgather_into_tensor_coalesced(outputs, inputs, opts)

    def reduce_scatter_single(self, output, input, opts=None):
        return self._reduce_scatter_base(output, input, opts)

    def reduce_scatter_single_coalesced(self, outputs, inputs, opts=None):
        return self.reduce_scatter_tensor_coalesced(outputs, inputs, opts)

    def all_to_all_single(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        return self.alltoall_base(output, input, output_split_sizes, input_split_sizes, opts)

    # torch 2.15's single-tensor gather (both names): the root's output holds world_size inputs.
    def gather_single(self, output, input, opts=None):
        opts = _opts(opts, "GatherOptions")
        if self._rank != opts.rootRank:  # torch passes an empty placeholder here
            self.gloo.gather([], [_host(input)], opts).wait()
            return _done([output])
        host = torch.empty(output.shape, dtype=output.dtype)
        chunks = [c.view(input.shape) for c in host.view(self._world, -1).unbind(0)]
        self.gloo.gather([chunks], [_host(input)], opts).wait()
        _back(output, host)
        return _done([output])

    def gather_into_tensor(self, output, input, opts=None):
        return self.gather_single(output, input, opts)

    def alltoall(self, outputs, inputs, opts=None):
        opts = _opts(opts, "AllToAllOptions")
        hosts = [torch.empty_like(t, device="cpu") for t in outputs]
        self.gloo.alltoall(hosts, [_host(t) for t in inputs], opts).wait()
        for t, h in zip(outputs, hosts):
            _back(t, h)
        return _done(outputs)

    def barrier(self, opts=None):
        opts = _opts(opts, "BarrierOptions")
        torch.vkml.synchronize()  # what this rank queued runs before the others go on
        self.gloo.barrier(opts).wait()
        return _done([])

    def send(self, tensors, dst, tag):
        self.gloo.send([_host(t) for t in tensors], dst, tag).wait()
        return _done(tensors)

    def recv(self, tensors, src, tag):
        hosts = [torch.empty_like(t, device="cpu") for t in tensors]
        self.gloo.recv(hosts, src, tag).wait()
        for t, h in zip(tensors, hosts):
            _back(t, h)
        return _done(tensors)

    # --- identity ----------------------------------------------------------------------------
    def size(self):
        return self._world

    def getBackendName(self):
        return "vkml"

    def __repr__(self):
        return f"VkmlProcessGroup(rank={self._rank}, world_size={self._world}, over gloo)"


def _create(store, rank, world_size, timeout):
    if not isinstance(timeout, datetime.timedelta):
        timeout = datetime.timedelta(seconds=float(timeout))
    return VkmlProcessGroup(store, rank, world_size, timeout)


def register():
    """Register the "vkml" backend with torch.distributed (done by ``import vkml_torch``); the
    default backend for the vkml device. A no-op where torch has no distributed support."""
    if not dist.is_available() or _create_work_from_future is None or "vkml" in dist.Backend.backend_list:
        return
    dist.Backend.register_backend("vkml", _create, devices=["cpu", "vkml"])
