"""Serving agents over HTTP: ``loopwright serve`` (see ``docs/serve.md``).

:func:`create_app` builds the ASGI app (Starlette; run it with uvicorn): sessions are
durable runs in a checkpoint store, their events Server-Sent Events resumable with
``Last-Event-ID``, every session owned by the tenant of the API key that created it.
Needs the ``serve`` extra (``pip install 'loopwright[serve]'``).
"""

from loopwright.serve.app import AppConfig, create_app
from loopwright.serve.auth import KEYS_ENV, ApiKeys, load_keys
from loopwright.serve.errors import ApiError
from loopwright.serve.sessions import AgentSource, ServeConfig, SessionManager

__all__ = [
    "KEYS_ENV",
    "AgentSource",
    "ApiError",
    "ApiKeys",
    "AppConfig",
    "ServeConfig",
    "SessionManager",
    "create_app",
    "load_keys",
]
