"""Tests reach only this machine: outgoing connections and name look-ups are refused unless
they go to the loopback range (127.0.0.0/8, ::1, ``localhost``) or a unix socket.

A test that would talk to a real provider fails at once with the address it tried, before
any packet leaves, instead of hanging on a timeout or quietly spending a real key. The
check wraps the few places every client goes through: ``socket.socket.connect`` and
``connect_ex`` (plain, SSL and asyncio sockets), ``socket.create_connection`` (httpx's sync
transport) and ``socket.getaddrinfo`` (the resolver, asyncio's included).
"""

from __future__ import annotations

import ipaddress
import socket

__all__ = ["LoopbackOnlyError", "install", "is_loopback", "uninstall"]

_MARK = "_loopback_only_original"


class LoopbackOnlyError(RuntimeError):
    """Not an `OSError`, so no client mistakes it for a flaky network and retries."""


def is_loopback(host: object, *, passive: bool = False) -> bool:
    """Whether ``host`` names this machine without asking a resolver. ``passive`` also lets
    through what a server binds to (no host, or the unspecified address)."""
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if host is None or host == "":
        return passive
    if not isinstance(host, str):
        return False
    name = host.strip("[]").split("%", 1)[0].rstrip(".").lower()
    if name == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False  # a host name: resolving it would ask DNS
    mapped = getattr(address, "ipv4_mapped", None)
    if mapped is not None:
        address = mapped
    return address.is_loopback or (passive and address.is_unspecified)


def _refuse(host: object, port: object) -> LoopbackOnlyError:
    return LoopbackOnlyError(
        f"network access is blocked in tests: {host}:{port} is not a loopback address "
        "(only 127.0.0.0/8, ::1, localhost and unix sockets are reachable)"
    )


def _check_address(sock: socket.socket, address: object) -> None:
    if sock.family not in (socket.AF_INET, socket.AF_INET6):
        return  # unix sockets and the like never leave the machine
    host, port = address[:2] if isinstance(address, tuple) else (address, "?")
    if not is_loopback(host):
        raise _refuse(host, port)


def install() -> bool:
    """Wrap the socket functions (once per process); False if they already were."""
    if hasattr(socket.socket.connect, _MARK):
        return False
    connect, connect_ex = socket.socket.connect, socket.socket.connect_ex
    create_connection, getaddrinfo = socket.create_connection, socket.getaddrinfo

    def guarded_connect(self, address):
        _check_address(self, address)
        return connect(self, address)

    def guarded_connect_ex(self, address):
        _check_address(self, address)
        return connect_ex(self, address)

    def guarded_create_connection(address, *args, **kwargs):
        if not is_loopback(address[0]):
            raise _refuse(address[0], address[1])
        return create_connection(address, *args, **kwargs)

    def guarded_getaddrinfo(host, port, *args, **kwargs):
        if not is_loopback(host, passive=True):
            raise _refuse(host, port)
        return getaddrinfo(host, port, *args, **kwargs)

    for name, guarded, original in (
        ("connect", guarded_connect, connect),
        ("connect_ex", guarded_connect_ex, connect_ex),
    ):
        setattr(guarded, _MARK, original)
        setattr(socket.socket, name, guarded)
    for name, guarded, original in (
        ("create_connection", guarded_create_connection, create_connection),
        ("getaddrinfo", guarded_getaddrinfo, getaddrinfo),
    ):
        setattr(guarded, _MARK, original)
        setattr(socket, name, guarded)
    return True


def uninstall() -> None:
    """Put the original socket functions back."""
    for owner, name in (
        (socket.socket, "connect"),
        (socket.socket, "connect_ex"),
        (socket, "create_connection"),
        (socket, "getaddrinfo"),
    ):
        original = getattr(getattr(owner, name), _MARK, None)
        if original is not None:
            setattr(owner, name, original)
