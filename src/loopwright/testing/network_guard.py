"""Block real network traffic in tests.

Installing the guard patches :func:`socket.socket.connect` (and ``connect_ex``,
``getaddrinfo``) so any connection to an address outside the loopback range raises
:class:`NetworkBlocked`. Unix sockets and 127.0.0.0/8 / ::1 stay allowed, so local fake
servers, Redis and PostgreSQL on 127.0.0.1 keep working.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


class NetworkBlocked(RuntimeError):
    """A test tried to reach the network."""


_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", ""}


def _is_local_host(host: object) -> bool:
    if not isinstance(host, str):
        return True  # AF_UNIX paths (bytes) and odd families
    if host in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _check(address: Any) -> None:
    if isinstance(address, tuple) and address and not _is_local_host(address[0]):
        raise NetworkBlocked(f"network access blocked in tests: {address[0]!r}")


_originals: dict[str, Callable[..., Any]] = {}


def install() -> None:
    if _originals:
        return
    _originals["connect"] = socket.socket.connect
    _originals["connect_ex"] = socket.socket.connect_ex
    _originals["getaddrinfo"] = socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _check(address)
        _originals["connect"](self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _check(address)
        result: int = _originals["connect_ex"](self, address)
        return result

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not _is_local_host(
            host.decode() if isinstance(host, bytes) else host
        ):
            raise NetworkBlocked(f"network access blocked in tests: DNS lookup of {host!r}")
        return _originals["getaddrinfo"](host, *args, **kwargs)

    socket.socket.connect = connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign,assignment]
    socket.getaddrinfo = getaddrinfo


def uninstall() -> None:
    if not _originals:
        return
    socket.socket.connect = _originals.pop("connect")  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = _originals.pop("connect_ex")  # type: ignore[method-assign,assignment]
    socket.getaddrinfo = _originals.pop("getaddrinfo")


@contextmanager
def blocked() -> Iterator[None]:
    install()
    try:
        yield
    finally:
        uninstall()
