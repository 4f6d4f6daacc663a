"""``loopwright serve``: the HTTP API over agents defined in a module (docs/serve.md)."""

from __future__ import annotations

from collections.abc import Mapping

import click

from loopwright.cli.agents import import_ref
from loopwright.cli.options import POSITIVE_INT, POSITIVE_SECONDS, store_options
from loopwright.core.errors import UserError
from loopwright.loop import Agent
from loopwright.store import open_store

SERVE_HELP = """Serve agents over HTTP: sessions, Server-Sent Events, approvals.

AGENTS names a dict of agent name -> Agent (or a factory returning one), as
MODULE:ATTRIBUTE. API keys come from --keys-file or LOOPWRIGHT_SERVE_KEYS
("KEY=TENANT,..."); every session belongs to the tenant of the key that created it.

\b
Examples:
  LOOPWRIGHT_SERVE_KEYS="dev-key-123=team-a" loopwright serve --agents myapp:agents
  loopwright serve --agents myapp:agents --keys-file keys.json --port 9000
  loopwright serve --agents myapp:agents --store postgres --store-url postgresql://db/app

\b
Several processes (any hosts) sharing one store and one Redis form a cluster: any of them
takes any request, runs go to whichever worker is free, a dead worker's runs resume
elsewhere:
  loopwright serve --agents myapp:agents --store-url postgresql://db/app \\
                   --redis-url redis://cache:6379/0
"""


def load_agents(ref: str) -> dict[str, object]:
    obj = import_ref(ref, "--agents")
    if not isinstance(obj, Mapping) or not obj:
        raise UserError(
            f"--agents {ref!r} is a {type(obj).__name__}; it must name a non-empty dict "
            "{name: Agent or factory}"
        )
    for name, value in obj.items():
        if not isinstance(name, str) or not (isinstance(value, Agent) or callable(value)):
            raise UserError(
                f"--agents {ref!r}: entry {name!r} must map a name to an Agent or a factory"
            )
    return dict(obj)


@click.command("serve", help=SERVE_HELP)
@click.option("--agents", "agents_ref", required=True, help="MODULE:ATTRIBUTE of the agents dict.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    default=8000,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port to listen on (0: any free port).",
)
@click.option("--keys-file", default=None, help="API keys: JSON {key: tenant} or key=tenant lines.")
@click.option(
    "--max-body",
    default=1 << 20,
    show_default=True,
    type=POSITIVE_INT,
    help="Request body limit (bytes).",
)
@click.option(
    "--drain",
    default=10.0,
    show_default=True,
    type=float,
    help="Seconds a shutdown waits for runs in progress before cancelling them.",
)
@click.option(
    "--no-resume",
    is_flag=True,
    help="Do not resume, at startup, served sessions whose process died mid-run.",
)
@click.option("--access-log/--no-access-log", default=True, help="Log every request.")
@click.option(
    "--lock-ttl",
    default=120.0,
    show_default=True,
    type=POSITIVE_SECONDS,
    help="Seconds a session's lock (its lease) lives without a heartbeat.",
)
@click.option(
    "--recover-every",
    default=60.0,
    show_default=True,
    type=float,
    help="Seconds between sweeps resuming sessions whose process died (0: at startup only).",
)
@click.option(
    "--redis-url",
    "--events-url",
    "redis_url",
    envvar=["LOOPWRIGHT_SERVE_REDIS_URL", "LOOPWRIGHT_SERVE_EVENTS_URL"],
    default=None,
    help="redis://...: join the cluster of server processes sharing this Redis and the store "
    "(work queue, events, control); without it the process serves alone.",
)
@click.option(
    "--redis-prefix",
    default="loopwright:serve",
    show_default=True,
    help="Prefix of the cluster's Redis keys (one cluster per prefix).",
)
@click.option(
    "--store-threads",
    default=16,
    show_default=True,
    type=POSITIVE_INT,
    help="Threads (and database connections) for store calls; in a cluster over PostgreSQL "
    "keep processes x threads under its max_connections.",
)
@click.option(
    "--max-runs",
    default=256,
    show_default=True,
    type=POSITIVE_INT,
    help="Runs this process takes from the cluster's queue at once.",
)
@store_options
def serve(
    agents_ref,
    host,
    port,
    keys_file,
    max_body,
    drain,
    no_resume,
    access_log,
    lock_ttl,
    recover_every,
    redis_url,
    redis_prefix,
    store_threads,
    max_runs,
    store_kind,
    store_url,
):
    try:
        import uvicorn

        from loopwright.durable import DurableConfig
        from loopwright.serve import AppConfig, ClusterConfig, ServeConfig, create_app, load_keys
    except ImportError as exc:
        raise UserError(
            f"loopwright serve needs the serve extra ({exc.name} is missing): "
            "pip install 'loopwright[serve]'"
        ) from None
    agents = load_agents(agents_ref)
    keys = load_keys(keys_file)
    store = open_store(store_kind, store_url)
    config = AppConfig(
        max_body=max_body,
        resume_interrupted=not no_resume,
        recover_every=recover_every,
        serve=ServeConfig(
            drain=drain, durable=DurableConfig(lock_ttl=lock_ttl), store_threads=store_threads
        ),
    )
    cluster = None
    if redis_url:
        # the worker's heartbeat lives as long as a session lock: one lease setting
        cluster = ClusterConfig(redis_url, redis_prefix, lease_ttl=lock_ttl, max_runs=max_runs)
    app = create_app(agents, store, keys, config, cluster)  # type: ignore[arg-type]

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: object) -> None:
            # SIGTERM/Ctrl-C: take no new run from the queue while connections drain
            app.manager.stop_taking_work()
            super().handle_exit(sig, frame)  # type: ignore[arg-type]

    try:
        # open event streams end when their runs do: past the drain time uvicorn closes
        # them, then the app's shutdown interrupts what still runs (a checkpoint each)
        server = Server(
            uvicorn.Config(
                app,
                host=host,
                port=port,
                log_level="info",
                access_log=access_log,
                timeout_graceful_shutdown=drain,
            )
        )
        try:
            server.run()
        except SystemExit:
            if server.started:
                raise
    finally:
        store.close()
    if not server.started:
        # uvicorn logs why (an address in use) and exits 3, which is this CLI's code for
        # an unreachable store: a usage error names the option instead
        raise UserError(
            f"the server could not start listening on {host}:{port} (see the error above); "
            "choose another --port or stop what uses it"
        )


COMMANDS: tuple[click.Command, ...] = (serve,)
