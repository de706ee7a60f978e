"""The relay's keys: the deployment key of the account hash (kept in a file beside the logs or the store, so
that an account keeps its name across restarts, and no one without the file can test a guessed API key
against a record), and the account of a request's headers."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Final

__all__ = ["KEY_FILE", "account_of", "deployment_key", "key_file"]

log: Final = logging.getLogger("streamfsm.relay")

KEY_FILE: Final = "streamfsm-relay.key"
_KEY_BYTES: Final = 32
# SigV4 signs each request anew: the access key id is what names the account, not the header.
_SIGV4: Final = re.compile(rb"^\s*AWS4-HMAC-SHA256\s.*?\bCredential=([A-Za-z0-9]+)/", re.IGNORECASE)


def _sqlite_path(store: str | None) -> str | None:
    if store is not None and store.startswith("sqlite:///"):
        return store[len("sqlite:///") :].split("?", 1)[0] or None
    return None


def deployment_key(given: str | None, *beside: str | None, store: str | None = None) -> bytes:
    """The key of the account hash: ``given`` (any text, 16 characters at least), else the one in
    ``KEY_FILE`` in the folder of the first path of ``beside`` (then of a SQLite ``store``), made there
    (mode 0600) at the first start; with neither, a new key of this process (accounts are then named anew
    at each start)."""
    if given is not None:
        if len(given) < 16:
            raise ValueError("the account key must be at least 16 characters")
        return hashlib.sha256(b"streamfsm.relay.account\0" + given.encode()).digest()
    kept = key_file(*beside, store=store)
    if kept is not None:
        try:
            return _kept_key(kept)
        except OSError as exc:  # a log on a device (/dev/stdout), a folder the relay may not write
            why = f"{kept} cannot be kept ({type(exc).__name__})"
    else:
        why = "no log file or SQLite store to keep it beside"
    if kept is not None or store is not None:
        log.warning(
            "the account key is this process's own (%s): accounts are named anew at each start;"
            " give --account-key-env to keep them",
            why,
        )
    return secrets.token_bytes(_KEY_BYTES)


def key_file(*beside: str | None, store: str | None = None) -> Path | None:
    """Where ``deployment_key`` keeps the key: beside the first path of ``beside``, else a SQLite store. A
    path that is there but no regular file (a log on ``/dev/stdout``, ``/proc/self/fd/1``) is no place to
    keep it: its folder is a device's, and each process would make a key of its own."""
    places = (Path(p) for p in (*beside, _sqlite_path(store)) if p)
    return next((path.parent / KEY_FILE for path in places if _keeps_files(path)), None)


_DEVICE_FOLDERS: Final = ("/dev", "/proc", "/sys")


def _keeps_files(path: Path) -> bool:
    """Whether a key may be kept beside ``path``: a regular file (or one to be made) in a folder of files."""
    folder = os.path.realpath(path.parent)
    if any(folder == top or folder.startswith(top + "/") for top in _DEVICE_FOLDERS):
        return False
    return path.is_file() or not path.exists()


def _kept_key(path: Path) -> bytes:
    """The key in ``path``, made whole in one step if it is not there (several workers may start at once)."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as out:
                out.write(secrets.token_hex(_KEY_BYTES) + "\n")
            with contextlib.suppress(FileExistsError):  # another process made it first: its key is the key
                os.link(draft, path)
        finally:
            draft.unlink(missing_ok=True)
    text = path.read_text(encoding="ascii", errors="replace").strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != _KEY_BYTES:
        raise ValueError(f"{path} does not hold a key the relay wrote (remove it to make a new one)")
    return key


def account_of(headers: Iterable[tuple[bytes, bytes]], names: tuple[str, ...], key: bytes) -> str | None:
    """A keyed hash naming the account of the first header present among ``names``; never the value. A
    SigV4 ``Authorization`` names its access key id only (its signature changes with every request)."""
    found = {k.lower(): v for k, v in headers}
    for name in names:
        value = found.get(name.lower().encode("latin-1"))
        if value:
            sigv4 = _SIGV4.match(value)
            if sigv4 is not None:
                value = b"aws-access-key-id\0" + sigv4.group(1)
            digest = hashlib.blake2b(value, key=key, digest_size=8).hexdigest()
            return f"acct_{digest}"
    return None
