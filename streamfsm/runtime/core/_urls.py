"""A base URL checked before anything is sent: a configuration mistake is a usage error, never a transient
connection fault that a retry could fix."""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["check_base_url"]


def check_base_url(base_url: object) -> str:
    """``base_url`` when it is an http(s) URL with a host; else ``ValueError`` naming what is wrong (the
    scheme and host only: a URL may carry a key in its query or user part)."""
    if not isinstance(base_url, str) or not base_url.strip():
        raise ValueError("base_url must be a non-empty http(s) URL, e.g. https://api.openai.com/v1")
    try:
        parts = urlsplit(base_url.strip())
        port = parts.port  # raises for a port that is not a number or out of range
    except ValueError:
        raise ValueError("base_url is not a valid URL (check its host and port)") from None
    if parts.scheme.lower() not in ("http", "https"):
        shown = f"{parts.scheme!r}" if parts.scheme else "none"
        raise ValueError(f"base_url needs an http or https scheme, not {shown} (e.g. https://host/v1)")
    if not parts.hostname:
        raise ValueError(f"base_url has no host ({parts.scheme}://HOST...)")
    del port
    return base_url
