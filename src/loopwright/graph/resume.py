"""Continuing a thread from its checkpoint: a run started with no input, with a
``Command`` (``resume`` answers for pending interrupts, ``update`` writes, ``goto``
targets), a subgraph run found again under its parent task, or a fork from an earlier
checkpoint (``checkpoint_id``: time travel).

The pending superstep's tasks are rebuilt from the checkpoint: those that finished before
the stop keep their writes and are not run again (:func:`pending_results` is what a
stopped superstep records for this), the interrupted ones get their answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from loopwright.graph.checkpoint import PendingResult, Saved
from loopwright.graph.task import Cursor, Task
from loopwright.graph.types import END, START, Command, EmptyInputError, GraphError, Send

if TYPE_CHECKING:
    from loopwright.graph.pregel import _Run


async def resume(run: _Run, saved: Saved | None, command: Command[Any] | None) -> list[Task]:
    if command is not None and command.resume is not None and run.saver is None:
        raise GraphError("Cannot use Command(resume=...) without a checkpointer")
    if saved is None:
        raise EmptyInputError(
            "the graph got no input and the thread has no checkpoint to continue; "
            "pass an input (or a thread id that has state)"
        )
    run.values = dict(saved.values)
    run.barriers = {k: set(v) for k, v in saved.barriers.items()}
    run.saved = saved
    run.step = saved.step + 1
    run.stop = run.step + run.limit + 1
    results = saved.results
    if run.checkpoint_id is not None and (command is None or command.resume is None):
        results = {}  # time travel: the pending superstep runs again from scratch
        await run.save("fork", list(saved.next), {}, step=saved.step)
        run.step = saved.step + 1
    _check_pending(run, saved)
    tasks = run.tasks(list(saved.next))
    for task in tasks:
        if task.name == START:  # stopped before its input was applied: apply it now
            if saved.inputs is None:
                raise GraphError(
                    f"checkpoint {saved.number} of thread {run.thread!r} is a run's "
                    "input, stored without it: invoke the graph with that input again"
                )
            task.writes, task.done = list(saved.inputs), True
            continue
        _restore(run, task, results.get(task.id))
    if command is not None:
        _apply_command(run, command, tasks)
    run.emit("values", dict(run.values))
    return tasks


def _check_pending(run: _Run, saved: Saved) -> None:
    nodes = run.graph.nodes
    for pending in saved.next:
        name = pending.node if isinstance(pending, Send) else pending
        if name != START and name not in nodes:  # the graph changed since
            raise GraphError(
                f"checkpoint {saved.number} of thread {run.thread!r} runs node {name!r} "
                "next, which this graph does not have: add the node back, or choose what "
                "runs next with update_state(config, values, as_node=...)"
            )


def _restore(run: _Run, task: Task, result: PendingResult | None) -> None:
    if result is None:
        return
    if result.writes is not None:
        task.writes, task.gotos, task.done = list(result.writes), list(result.gotos), True
    else:
        task.cursor = Cursor(f"{run.thread}:{task.id}", list(result.resume))
        task.interrupts = tuple(result.interrupts)


def _apply_command(run: _Run, command: Command[Any], tasks: list[Task]) -> None:
    if command.resume is not None:
        _give_answers(run, command.resume, tasks)
    for task in tasks:
        task.interrupts = ()
    writes = run.graph.filter_writes(command.update_items("the input"))
    if writes:
        null = Task(run, "update", "__input__", None)
        null.writes = writes
        values = dict(run.values)
        run.pending_changes = run.merge(values, [null])
        run.values = values
    for goto in command.goto_targets("the input"):
        if isinstance(goto, Send):
            tasks.append(run.task(len(tasks), goto.node, goto))
        elif goto != END and all(t.name != goto or t.send for t in tasks):
            run.graph.check_node(goto)
            tasks.append(run.task(len(tasks), goto, None))


def _give_answers(run: _Run, resume: Any, tasks: list[Task]) -> None:
    waiting = [t for t in tasks if t.interrupts]
    by_id = {i.id: t for t in waiting for i in t.interrupts}
    if isinstance(resume, Mapping) and resume and all(k in by_id for k in resume):
        answers = [(by_id[k], k, v) for k, v in resume.items()]
    elif len(waiting) > 1 or (waiting and len(waiting[0].interrupts) > 1):
        unknown = [repr(k) for k in resume if k not in by_id] if _is_id_map(resume) else []
        problem = (
            f"unknown interrupt id(s) {', '.join(unknown)}"
            if unknown
            else "several interrupts are pending"
        )
        raise GraphError(
            f"{problem}: resume with Command(resume={{interrupt_id: answer, ...}}); "
            f"pending ids: {', '.join(by_id)}"
        )
    elif not waiting:
        raise GraphError("Command(resume=...) given, but no interrupt is pending")
    else:
        answers = [(waiting[0], waiting[0].interrupts[0].id, resume)]
    for task, interrupt_id, answer in answers:
        if task.cursor is None:
            task.cursor = Cursor(f"{run.thread}:{task.id}", [])
        if task.spec is not None and task.spec.subgraph is not None:
            task.cursor.answers[interrupt_id] = answer  # for the subgraph's own task
        else:
            task.cursor.resume.append(answer)


def pending_results(tasks: list[Task]) -> dict[str, PendingResult]:
    out: dict[str, PendingResult] = {}
    for t in tasks:
        if t.name == START:
            continue
        ok = t.error is None and not t.interrupts and t.parent_command is None
        out[t.id] = PendingResult(
            writes=list(t.writes) if ok else None,
            gotos=list(t.gotos) if ok else [],
            error=None if t.error is None else repr(t.error),
            resume=list(t.cursor.resume) if t.cursor is not None else [],
            interrupts=list(t.interrupts),
        )
    return out


def _is_id_map(resume: Any) -> bool:
    """A resume value meant as answers by interrupt id (a dict with string keys)."""
    return isinstance(resume, Mapping) and bool(resume) and all(isinstance(k, str) for k in resume)
