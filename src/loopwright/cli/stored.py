"""Commands and durable sessions: opening the store, the agent of a stored session,
and ``loopwright run``'s switch to a stored session when it may pause.

A session's metadata holds one thing for the command line: ``{"agent": SEALED}``, the
sealed :class:`~loopwright.cli.recipe.AgentRecipe` of the agent that started it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace

from loopwright.cli.exit_codes import exit_code
from loopwright.cli.output import CliError
from loopwright.cli.recipe import AgentRecipe, seal, unseal
from loopwright.core.events import RunEvent
from loopwright.core.run import RunResult, RunStop, new_session_id
from loopwright.durable import Durable
from loopwright.loop import Agent
from loopwright.store import CheckpointStore
from loopwright.store.errors import SessionNotFound
from loopwright.tracing import fanout

METADATA_KEY = "agent"


def metadata_for(recipe: AgentRecipe) -> dict[str, object]:
    return {METADATA_KEY: seal(recipe)}


def stored_recipe(store: CheckpointStore, session_id: str) -> AgentRecipe | None:
    """The sealed recipe of ``session_id``; ``None`` for a session not stored yet.

    A corrupt session raises the store's own error (it is not "no agent recorded");
    a recipe that is missing, malformed or not sealed here raises a RecipeError."""
    try:
        state = store.load(session_id)
    except SessionNotFound:
        return None
    return unseal(state.metadata.get(METADATA_KEY), session_id)


def session_recipe(
    store: CheckpointStore,
    session_id: str | None,
    given: Mapping[str, object],
    defaults: AgentRecipe,
) -> AgentRecipe:
    """The recipe a command runs ``session_id`` with.

    ``--agent`` or ``--model`` on the command line: the command line alone (``defaults``
    with ``given`` on top). Otherwise a stored session's sealed recipe with any other flag
    given now on top; a new session gets ``defaults``.
    """
    if "agent" in given and any(k in given for k in ("model", "tools", "base_url", "system")):
        raise CliError("--agent excludes --model, --tools, --base-url and --system; pass one way")
    if "agent" in given or "model" in given or session_id is None:
        return defaults.updated(given)
    recorded = stored_recipe(store, session_id)
    return (recorded or defaults).updated(given)


def observed(agent: Agent, on_event: Callable[[RunEvent], None]) -> Agent:
    """``agent`` with ``on_event`` also subscribed to its events (for ``--stream``)."""
    config = agent.config
    hooks = replace(config.hooks, on_event=fanout(config.hooks.on_event, on_event))
    return Agent.from_config(replace(config, hooks=hooks))


def may_pause(agent: Agent, yes: bool, no: bool, interactive: bool) -> bool:
    """Whether a run can pause on a confirmation nobody can answer now: then
    ``loopwright run`` keeps it in a stored session that ``resume`` continues."""
    if yes or no or interactive:
        return False
    return any(t.spec.requires_confirmation for t in agent.tools)


def run_durably(
    agent: Agent,
    prompt: str,
    store: CheckpointStore,
    recipe: AgentRecipe,
    session_id: str | None = None,
) -> RunResult:
    """One turn of ``prompt`` checkpointed to ``store``; a new session records ``recipe``."""
    durable = Durable(agent, store)
    sid = new_session_id() if session_id is None else session_id  # known if interrupted
    with resumable(sid):
        return durable.run(prompt, session_id=sid, metadata=metadata_for(recipe))


@contextmanager
def resumable(session_id: str) -> Iterator[None]:
    """Ctrl-C during a stored session's run: exit ``cancelled`` (16) with the session and
    how to continue it. It said only "interrupted", though the session keeps its last
    checkpoint and ``resume`` picks the run up from there."""
    try:
        yield
    except KeyboardInterrupt:
        raise CliError(
            f"interrupted; session {session_id} keeps its last checkpoint: continue it with "
            f"`loopwright resume {session_id}`",
            exit_code(RunStop.CANCELLED),
            session_id=session_id,
        ) from None
