"""The sockets this process holds open, from ``/proc/self/fd`` (Linux): what a test compares before and after
to show nothing it started leaked a connection."""

from __future__ import annotations

import os


def open_sockets() -> set[str]:
    """``fd->socket:[inode]`` for each open socket."""
    found = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except FileNotFoundError:  # the fd of the listdir itself
            continue
        if target.startswith("socket:"):
            found.add(f"{name}->{target}")
    return found
