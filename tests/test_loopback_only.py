"""Tests reach only this machine: the guard in conftest refuses any other address before
the system call, and lets loopback and unix sockets through (in the test process and in
the processes it starts)."""

from __future__ import annotations

import asyncio
import errno
import socket
import subprocess
import sys

import pytest

REFUSED = r"network access is blocked in tests: 192\.0\.2\.1:80 is not a loopback address"


def test_connect_to_a_public_address_is_refused_before_the_system_call():
    sock = socket.socket()
    sock.close()  # had the call reached the kernel, this would be EBADF, not the guard
    with pytest.raises(RuntimeError, match=REFUSED):
        sock.connect(("192.0.2.1", 80))
    with pytest.raises(RuntimeError, match=REFUSED):
        sock.connect_ex(("192.0.2.1", 80))


def test_an_ipv6_public_address_is_refused():
    sock = socket.socket(socket.AF_INET6)
    sock.close()
    with pytest.raises(RuntimeError, match=r"2001:db8::1:443 is not a loopback"):
        sock.connect(("2001:db8::1", 443, 0, 0))


def test_create_connection_and_name_lookups_are_refused():
    with pytest.raises(RuntimeError, match=REFUSED):
        socket.create_connection(("192.0.2.1", 80))
    with pytest.raises(RuntimeError, match=r"api\.example\.invalid:443 is not a loopback"):
        socket.getaddrinfo("api.example.invalid", 443)


def test_asyncio_connections_are_refused():
    async def connect(host):
        await asyncio.open_connection(host, 80)

    with pytest.raises(RuntimeError, match=REFUSED):
        asyncio.run(connect("192.0.2.1"))  # numeric: asyncio skips the resolver
    with pytest.raises(RuntimeError, match=r"api\.example\.invalid:80 is not a loopback"):
        asyncio.run(connect("api.example.invalid"))


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_loopback_server_is_reachable(host):
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        with socket.create_connection((host, port)) as client:
            accepted, _ = server.accept()
            with accepted:
                client.sendall(b"ping")
                assert accepted.recv(4) == b"ping"
        with socket.socket() as other:  # all of 127/8 reaches the kernel, which says no
            assert other.connect_ex(("127.0.0.2", port)) == errno.ECONNREFUSED


def test_ipv6_loopback_and_bind_addresses_resolve():
    assert socket.getaddrinfo("::1", 80, type=socket.SOCK_STREAM)
    assert socket.getaddrinfo(None, 80, flags=socket.AI_PASSIVE)
    assert socket.getaddrinfo("0.0.0.0", 80)


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="POSIX sockets")
def test_a_unix_socket_is_reachable(tmp_path):
    path = str(tmp_path / "s")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(path)
        server.listen()
        with socket.socket(socket.AF_UNIX) as client:
            client.connect(path)
            accepted, _ = server.accept()
            accepted.close()


def test_a_process_the_tests_start_is_guarded_too():
    code = "import socket; socket.create_connection(('192.0.2.1', 80))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode != 0
    assert "LoopbackOnlyError: network access is blocked in tests: 192.0.2.1:80" in done.stderr
