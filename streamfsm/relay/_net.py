"""Which addresses and names are this host's own: below ``_app`` and ``_admin``, which both ask."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str | None) -> bool:
    """Whether ``host`` (an address or ``localhost``) is a loopback address."""
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_name(value: str) -> str:
    """The host of a ``Host`` header's value (``name``, ``name:port``, ``[v6]:port``), lower case, without
    its port, brackets or trailing dot."""
    value = value.strip().lower()
    if value.startswith("["):
        name = value[1:].partition("]")[0]
    else:
        name, _, port = value.rpartition(":")
        if not name or not port.isdigit():
            name = value
    return name.rstrip(".")


def is_loopback_name(host: str) -> bool:
    """Whether a ``Host`` names this machine's loopback: ``localhost``, a ``.localhost`` name (RFC 6761:
    never resolved by DNS) or a loopback address."""
    return host.endswith(".localhost") or is_loopback(host)
