"""Lock owner ids and the dead-owner check (``store.state``)."""

from __future__ import annotations

import os
import socket

import pytest

from loopwright.store import lock_owner_id
from loopwright.store import state as store_state


def test_owner_is_dead_uses_the_cached_host_name(monkeypatch: pytest.MonkeyPatch) -> None:
    me = lock_owner_id()  # caches this process's host name
    host = me.partition(":")[0]
    calls: list[int] = []

    def counted() -> str:
        calls.append(1)
        return host

    monkeypatch.setattr(socket, "gethostname", counted)
    assert store_state.owner_is_dead(me) is False  # this very process
    assert store_state.owner_is_dead(f"{host}:999999999:dead") is True
    assert store_state.owner_is_dead(f"otherhost:{os.getpid()}:x") is False
    assert calls == []  # a lock check is not a system call per owner looked at
