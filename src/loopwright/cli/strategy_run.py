"""``loopwright run --strategy NAME``: run a reasoning strategy over the agent the other
options describe, and print its result like an agent run's (docs/strategies.md).

A plan-and-execute run that escalates pauses: its progress is stored in the session
store under the run's session id, and the hint says how to continue it from Python
(``loopwright resume`` does not continue strategy runs).
"""

from __future__ import annotations

from loopwright.cli.output import emit_json, say
from loopwright.cli.results import print_result, result_json
from loopwright.core.run import RunStop
from loopwright.loop import Agent
from loopwright.store import open_store
from loopwright.strategies.catalog import for_agent
from loopwright.strategies.memory import PlanCheckpoints


def run_strategy(name: str, agent: Agent, prompt: str, *, as_json: bool, streamed: bool) -> RunStop:
    """Run strategy ``name`` on ``prompt``; its events reach the agent's subscribers."""
    outcome = for_agent(name, agent).run(prompt, on_event=agent.config.hooks.on_event)
    result = outcome.run_result()
    if outcome.state is None:
        print_result(result, as_json=as_json, streamed=streamed)
        return outcome.stop
    store = open_store()
    try:
        PlanCheckpoints(store, outcome.session_id)(outcome.state)
    finally:
        store.close()
    sid = outcome.session_id
    hint = (
        f"the {name} run paused ({outcome.detail}); its progress is stored as session {sid}: "
        f"continue it from Python with `await PlanAndExecute(...).aresume("
        f"PlanCheckpoints(open_store(), {sid!r}).load())` (docs/strategies.md)"
    )
    if as_json:
        data = result_json(result)
        data["hint"] = hint
        emit_json(data)
    else:
        if result.answer and not streamed:
            say(result.answer)
        say(hint, err=True)
    return outcome.stop
