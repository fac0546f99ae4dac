"""Data-parallel training: process groups for ``thermocrop train --devices N`` (processes
started here) or for a run under ``torchrun`` (processes started by it), gloo on the CPU and
NCCL on GPUs."""

from __future__ import annotations

import logging
import multiprocessing
import os
import socket
import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch
import torch.distributed as dist

from ..core.errors import ThermoCropError

log = logging.getLogger(__name__)

__all__ = ["Ranks", "join", "launch", "launch_reporting", "under_torchrun"]


@dataclass
class Ranks:
    """This process's place in a data-parallel run.

    Attributes:
        rank: global rank, 0 writes the outputs.
        world_size: number of processes.
        local_rank: rank on this machine (its GPU index on CUDA).
        device: this process's device.
        stats_group: process group for the BatchNorm statistics, apart from the one DDP
            reduces gradients on.
    """

    rank: int
    world_size: int
    local_rank: int
    device: torch.device
    stats_group: Any = None

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def mean(self, value: float) -> float:
        """The mean of ``value`` over every rank."""
        t = torch.tensor([value], dtype=torch.float64,
                         device=self.device if self.device.type == "cuda" else "cpu")
        dist.all_reduce(t)
        return float(t.item()) / self.world_size

    def barrier(self) -> None:
        if self.device.type == "cuda":
            dist.barrier(device_ids=[self.device.index])
        else:
            dist.barrier()


def under_torchrun() -> bool:
    """True in a process that ``torchrun`` started with more than one process in all."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1 and "LOCAL_RANK" in os.environ


def join(device: torch.device) -> Optional[Ranks]:
    """This process's ``Ranks`` when it belongs to a data-parallel run, else None.

    Initialises the default process group from ``torchrun``'s environment when no group is
    there yet (``launch`` has set one up already). Backend: NCCL for CUDA, gloo for the CPU.
    """
    if not dist.is_available():
        return None
    if not dist.is_initialized():
        if not under_torchrun():
            return None
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    world = dist.get_world_size()
    if world < 2:
        return None
    rank = dist.get_rank()
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    if device.type == "cuda":
        if torch.cuda.device_count() <= local_rank:
            raise ValueError(f"Process {rank} needs GPU {local_rank} but PyTorch sees "
                             f"{torch.cuda.device_count()}; start at most one process per GPU.")
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    return Ranks(rank, world, local_rank, device, dist.new_group(backend=dist.get_backend()))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _entry(rank: int, world: int, port: int, backend: str, threads: int,
           fn: Callable[..., Any], args: tuple) -> None:
    logging.basicConfig(level=logging.INFO if rank == 0 else logging.WARNING,
                        format=f"%(levelname)s %(name)s [rank {rank}]: %(message)s")
    os.environ["LOCAL_RANK"] = str(rank)
    torch.set_num_threads(threads)
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    try:
        fn(*args)
    finally:
        dist.destroy_process_group()


def launch(fn: Callable[..., Any], n_processes: int, device: str, *args: Any) -> None:
    """Run ``fn(*args)`` in ``n_processes`` processes on this machine joined in one process
    group (NCCL where ``device`` is CUDA, else gloo); each CPU process gets an equal share of
    the cores. Raises when a process fails."""
    import torch.multiprocessing as mp

    cuda = device.startswith("cuda") or (device == "auto" and torch.cuda.is_available())
    if cuda and torch.cuda.device_count() < n_processes:
        raise ValueError(f"{n_processes} devices were asked for but PyTorch sees "
                         f"{torch.cuda.device_count()} GPUs.")
    backend = "nccl" if cuda else "gloo"
    threads = max(1, (os.cpu_count() or 1) // n_processes) if not cuda else \
        torch.get_num_threads()
    log.info("Starting %d training processes (%s)", n_processes, backend)
    try:
        mp.spawn(_entry, args=(n_processes, _free_port(), backend, threads, fn, args),
                 nprocs=n_processes, join=True)
    except mp.ProcessRaisedException as exc:
        # The child's traceback is in the message; its last line says what went wrong.
        lines = [line for line in str(exc).splitlines() if line.strip()]
        raise ThermoCropError(f"A training process failed: {lines[-1] if lines else exc}") \
            from None
    except mp.ProcessExitedException as exc:
        raise ThermoCropError(f"A training process ended unexpectedly: {exc}") from None


def launch_reporting(fn: Callable[..., Any], n_processes: int, device: str,
                     report: Optional[Callable[..., None]], *args: Any) -> None:
    """``launch(fn, n_processes, device, *args, queue)``: what a process puts on ``queue`` (a
    tuple) comes back here as ``report(*item)``, called in a thread of this process as the
    items arrive (all of them before this returns); None drops them."""
    with multiprocessing.Manager() as manager:
        queue = manager.Queue()

        def pass_on() -> None:
            for item in iter(queue.get, None):
                if report is not None:
                    report(*item)

        pump = threading.Thread(target=pass_on, daemon=True)
        pump.start()
        try:
            launch(fn, n_processes, device, *args, queue)
        finally:
            queue.put(None)
            pump.join(timeout=5)
