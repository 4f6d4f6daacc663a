"""Delta checkpoints rebuild exactly the state each superstep had, whatever the mix of
writes (property test over random scripts, on the memory and SQLite stores)."""

from __future__ import annotations

import uuid
from pathlib import Path

from graph_programs import scripted_graph
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwright.store import MemoryStore, SQLiteStore

_value = st.one_of(
    st.integers(-5, 5), st.text(max_size=30), st.lists(st.integers(0, 9), max_size=40)
)
_write = st.fixed_dictionaries(
    {},
    optional={
        "items": st.lists(_value, max_size=6),
        "merged": st.dictionaries(st.sampled_from("abcdef"), _value, max_size=3),
        "plain": _value,
    },
)


@settings(max_examples=25, deadline=None)
@given(script=st.lists(_write, min_size=1, max_size=60), sqlite=st.booleans())
def test_every_checkpoint_rebuilds_the_state_it_recorded(
    script: list[dict], sqlite: bool, tmp_path_factory
) -> None:  # type: ignore[no-untyped-def]
    path = Path(tmp_path_factory.mktemp("prop")) / "g.db"
    store = SQLiteStore(path) if sqlite else MemoryStore()
    config = {"configurable": {"thread_id": f"p-{uuid.uuid4().hex[:8]}"}, "recursion_limit": 200}
    app = scripted_graph(store, script)
    seen = list(app.stream({"items": [], "merged": {}, "step": 0}, config, stream_mode="values"))
    fresh = scripted_graph(store, script)  # no in-process cache: deltas replayed from rows
    history = list(fresh.get_state_history(config))
    rebuilt = [h.values for h in reversed(history) if h.metadata["source"] == "loop"]
    assert rebuilt == seen
    store.close()
