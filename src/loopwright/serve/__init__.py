"""Serving agents over HTTP: ``loopwright serve`` (see ``docs/serve.md``).

:func:`create_app` builds the ASGI app (Starlette; run it with uvicorn): sessions are
durable runs in a checkpoint store, their events Server-Sent Events resumable with
``Last-Event-ID``, every session owned by the tenant of the API key that created it.
With a :class:`ClusterConfig` (a Redis shared by several server processes) runs go
through a work queue and events through Redis. Needs the ``serve`` extra
(``pip install 'loopwright[serve]'``; a cluster also the ``redis`` one).
"""

from loopwright.serve.app import AppConfig, create_app
from loopwright.serve.auth import KEYS_ENV, ApiKeys, load_keys
from loopwright.serve.cluster import ClusterConfig
from loopwright.serve.errors import ApiError
from loopwright.serve.sessions import AgentSource, ServeConfig, SessionManager

__all__ = [
    "KEYS_ENV",
    "AgentSource",
    "ApiError",
    "ApiKeys",
    "AppConfig",
    "ClusterConfig",
    "ServeConfig",
    "SessionManager",
    "create_app",
    "load_keys",
]
