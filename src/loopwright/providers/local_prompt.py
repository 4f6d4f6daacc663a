"""Prompt, grammar and output parsing for the embedded (base, template-less) model.

The embedded model has no chat template and no native tool calling, so this module:

* renders a **few-shot prompt**: a preamble, one line per tool (name, one-line
  description, parameters), one worked example per tool *generated from its schema*
  (argument values from the schema's ``examples`` / ``default`` / ``enum`` / type), then
  the conversation so far (tool results included), ending with the ``Assistant:`` cue.
  The text lives in ``prompts/templates/local/*.txt`` (rendered with strict
  :class:`string.Template` substitution).
* builds the **output grammar**: a JSON Schema ``oneOf`` of
  ``{"tool": <name>, "arguments": <that tool's schema>}`` per tool and/or
  ``{"answer": string}``. Every string, array and the answer is length-bounded, because
  a strict grammar can otherwise trap a small model inside the last argument.
* **parses** the constrained output back into a tool call or an answer.

Contract: the prompt is a pure function of (tools, system, messages); its prefix
(preamble + tools + examples + system) does not depend on the conversation, and turn
``n + 1``'s prompt extends turn ``n``'s, so llama.cpp's prefix cache reuses it.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

from loopwright.core.grounding import STOPWORDS
from loopwright.core.messages import (
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from loopwright.core.tools import ToolSpec
from loopwright.core.untrusted import unwrap_untrusted
from loopwright.providers import local_ground as lgr
from loopwright.providers import local_plan as lp_plan

Mode = Literal["tools", "answer", "both"]

_TEMPLATE_PACKAGE = "loopwright"
_TEMPLATE_DIR = ("prompts", "templates", "local")


@dataclass(frozen=True, slots=True)
class GrammarBounds:
    """Length bounds written into the grammar (see the module docstring for why)."""

    max_string_chars: int = 200
    max_answer_chars: int = 600
    max_array_items: int = 8
    max_depth: int = 4


@cache
def template(name: str) -> string.Template:
    """The prompt template ``prompts/templates/local/<name>.txt`` (``name`` may name a
    subfolder: ``grounded/examples``)."""
    parts = name.split("/")
    parts[-1] += ".txt"
    ref = resources.files(_TEMPLATE_PACKAGE).joinpath(*_TEMPLATE_DIR, *parts)
    return string.Template(ref.read_text(encoding="utf-8"))


def render(template_name: str, /, **values: str) -> str:
    """Strict rendering: a missing variable is a ``KeyError``, never a silent gap."""
    return template(template_name).substitute(values)


# ------------------------------------------------------------------ schemas


def _first_sentence(text: str) -> str:
    line = " ".join(text.strip().split())
    cut = line.find(". ")
    return line[: cut + 1] if cut != -1 else line


def describe_parameters(schema: Mapping[str, Any]) -> str:
    """A compact signature such as ``{"city": string, "days"?: integer}``."""
    props = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    items = []
    for name, sub in props.items():
        mark = "" if name in required else "?"
        items.append(f"{json.dumps(name)}{mark}: {_type_name(sub)}{_example_hint(sub)}")
    return "{" + ", ".join(items) + "}"


MAX_HINT_CHARS = 120


def _example_hint(schema: Mapping[str, Any]) -> str:
    """The description of a parameter whose examples only its description gives and
    whose value is held to their shape (:func:`example_pattern`), e.g. `` (IANA
    timezone name (e.g., 'America/New_York', 'Europe/London'))``, else "". The name
    alone ("timezone") let the model write "Tokyo"; descriptions of every parameter
    made the prompt long and the tool choice worse (32 -> 26 of 32 in
    ``benchmarks/tool_choice_eval.py``), and free-text ones were copied into the value
    ("Paris, France (e.g., 'Paris, France' ..." on BFCL), so only these are shown."""
    if not isinstance(schema, Mapping) or "examples" in schema:
        return ""
    if example_pattern(schema_examples(schema)) is None:
        return ""
    text = _first_sentence(str(schema.get("description", "")))
    if len(text) > MAX_HINT_CHARS:
        text = text[:MAX_HINT_CHARS].rsplit(" ", 1)[0] + " ..."
    return f" ({text.rstrip('.')})"


def _type_name(schema: Mapping[str, Any]) -> str:
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    if kind == "array":
        return f"array of {_type_name(schema.get('items') or {})}"
    return str(kind or "value")


_EXAMPLE_CUE = re.compile(r"\b(?:e\.g\.|eg\.|for example|for instance|such as|like)[,:]?\s*", re.I)
_QUOTED = re.compile(r"""'([^'\n]{1,60})'|"([^"\n]{1,60})"|`([^`\n]{1,60})`""")


def schema_examples(schema: Mapping[str, Any]) -> list[Any]:
    """A parameter's example values: its ``examples``, else for a string the values its
    description gives after "e.g." / "for example" / "such as" (``"IANA timezone name
    (e.g., 'America/New_York', 'Europe/London')"`` gives both names). Real tool sets
    (MCP servers, OpenAPI) put examples in descriptions far more often than in
    ``examples``, and a value of the right shape is what the model copies the form of
    ("Asia/Tokyo", not "Tokyo")."""
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return list(examples)
    description = schema.get("description")
    if schema.get("type") != "string" or not isinstance(description, str):
        return []
    cue = _EXAMPLE_CUE.search(description)
    if cue is None:
        return []
    segment = re.split(r"[)\]]|\.\s", description[cue.end() :], maxsplit=1)[0]
    quoted = [next(g for g in m.groups() if g is not None) for m in _QUOTED.finditer(segment)]
    if quoted:
        return quoted[:MAX_DESCRIPTION_EXAMPLES]
    bare = re.split(r"[,;]", segment, maxsplit=1)[0].strip().rstrip(".")
    return [bare] if 0 < len(bare) <= MAX_BARE_EXAMPLE_CHARS else []


MAX_DESCRIPTION_EXAMPLES = 4
MAX_BARE_EXAMPLE_CHARS = 40


def example_value(
    schema: Mapping[str, Any], name: str = "value", depth: int = 0, variant: int = 0
) -> Any:
    """A plausible value for ``schema``: its examples (:func:`schema_examples`;
    ``variant`` picks which), ``default``, ``const`` or ``enum`` first, then a
    type-shaped placeholder."""
    examples = schema_examples(schema)
    if examples:
        return examples[variant % len(examples)]
    if "default" in schema:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "integer":
        return 3
    if kind == "number":
        return 2.5
    if kind == "boolean":
        return True
    if kind == "array":
        return [example_value(schema.get("items") or {}, name, depth + 1)]
    if kind == "object" or "properties" in schema:
        return example_arguments(schema, depth + 1) if depth < 3 else {}
    return name.replace("_", " ")


def example_arguments(
    schema: Mapping[str, Any], depth: int = 0, variant: int = 0
) -> dict[str, Any]:
    """Example arguments for a tool: every required property (all when none is)."""
    props: Mapping[str, Any] = schema.get("properties") or {}
    required = list(schema.get("required") or props)
    return {k: example_value(props[k], k, depth, variant) for k in required if k in props}


def has_examples(schema: Mapping[str, Any]) -> bool:
    """Whether every parameter a worked example fills (the required ones, all when none
    is) has example values of its own (``examples``, ``enum``, ``const``)."""
    props: Mapping[str, Any] = schema.get("properties") or {}
    needed = [k for k in (schema.get("required") or props) if k in props]
    return all(
        isinstance(props[k], Mapping)
        and any(key in props[k] for key in ("examples", "enum", "const"))
        for k in needed
    )


def example_count(schema: Mapping[str, Any]) -> int:
    """How many distinct worked examples the schema's ``examples`` lists support (1-2)."""
    props: Mapping[str, Any] = schema.get("properties") or {}
    counts = [len(schema_examples(p)) for p in props.values() if isinstance(p, Mapping)]
    return max(1, min(2, max(counts, default=1)))


def _bounded(schema: Mapping[str, Any], bounds: GrammarBounds, depth: int) -> dict[str, Any]:
    """A grammar-friendly copy of ``schema``: closed objects, bounded strings/arrays."""
    if depth > bounds.max_depth:
        return {"type": "string", "maxLength": bounds.max_string_chars}
    if "const" in schema:
        return {"const": schema["const"]}
    if "enum" in schema:
        return {"enum": list(schema["enum"])}
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return {"anyOf": [_bounded(s, bounds, depth + 1) for s in schema[key]]}
    kind = schema.get("type")
    if isinstance(kind, list):
        return {"anyOf": [_bounded({**schema, "type": k}, bounds, depth) for k in kind]}
    if kind == "object" and depth > 0 and not isinstance(schema.get("properties"), Mapping):
        return _free_object(bounds)
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        return {
            "type": "object",
            "properties": {k: _bounded(v, bounds, depth + 1) for k, v in props.items()},
            "required": [k for k in schema.get("required") or () if k in props],
            "additionalProperties": False,
        }
    if kind == "array":
        limit = min(int(schema.get("maxItems", bounds.max_array_items)), bounds.max_array_items)
        return {
            "type": "array",
            "items": _bounded(schema.get("items") or {"type": "string"}, bounds, depth + 1),
            "minItems": min(int(schema.get("minItems", 0)), limit),
            "maxItems": limit,
        }
    if kind in ("integer", "number", "boolean", "null"):
        return {"type": kind}
    shape = declared_pattern(schema) or example_pattern(schema_examples(schema))
    shape = shape or parts_pattern(schema)
    if shape is not None:
        return {"type": "string", "pattern": shape}
    limit = min(int(schema.get("maxLength", bounds.max_string_chars)), bounds.max_string_chars)
    return {
        "type": "string",
        "minLength": min(int(schema.get("minLength", 0)), limit),
        "maxLength": limit,
    }


def declared_pattern(schema: Mapping[str, Any]) -> str | None:
    """The string's own ``pattern``, when it is anchored and free of the syntax
    llama.cpp's converter refuses (``(?``: groups with flags, lookarounds); a tool or
    a strategy that knows the values' language states it (the SQL a database's tables
    allow: ``tools.builtin.sql_pattern.select_pattern``)."""
    pattern = schema.get("pattern")
    if not isinstance(pattern, str) or "(?" in pattern:
        return None
    return pattern if pattern.startswith("^") and pattern.endswith("$") else None


def _free_object(bounds: GrammarBounds) -> dict[str, Any]:
    """A nested object that declares no properties (``"gradeDict": {"type": "object"}``,
    "keys represent subjects and values represent scores"): keys of its own with
    plain values. Closed like the others, it could only be ``{}``."""
    value = {"type": "string", "maxLength": bounds.max_string_chars}
    return {
        "type": "object",
        "additionalProperties": {"anyOf": [{"type": "number"}, value, {"type": "boolean"}]},
    }


# A format the description states as comma-joined part names: "in the format of
# 'City, State (abbr)'", "in the format 'Latitude, Longitude'".
_PARTS_FORMAT = re.compile(
    r"\bformat(?: of)?:?\s+'(?P<parts>[A-Z][A-Za-z ()]*(?:, ?[A-Z][A-Za-z ()]*)+)'"
)
MAX_PART_CHARS = 60


def parts_pattern(schema: Mapping[str, Any]) -> str | None:
    """A pattern holding a string to the number of comma-joined parts its description's
    stated format has ("in the format of 'City, State (abbr)'": a city, a comma, a
    region), or ``None``. The model otherwise wrote the request's "Boston" alone, or
    "34.0522" for 'Latitude, Longitude'."""
    match = _PARTS_FORMAT.search(str(schema.get("description", "")))
    if match is None:
        return None
    commas = match.group("parts").count(",")
    part = f'[^,"\\\\]{{1,{MAX_PART_CHARS}}}'
    return f"^ ?{part}(, ?{part}){{{commas}}}$"


_SHAPE_PART = re.compile(r"(?P<word>[A-Za-z_]+)|(?P<digits>[0-9]+)|(?P<sign>[^\sA-Za-z0-9_])")
MAX_SHAPE_WORD = 40
MAX_SHAPE_DIGITS = 12


def _shape(example: str) -> tuple[str, ...] | None:
    """``America/New_York`` -> ``("w", "/", "w")``; ``None`` for text with spaces."""
    if not example or any(ch.isspace() for ch in example):
        return None
    parts: list[str] = []
    for match in _SHAPE_PART.finditer(example):
        kind = match.lastgroup
        parts.append(match.group(0) if kind == "sign" else str(kind)[0])
    return tuple(parts)


def example_pattern(examples: Sequence[Any]) -> str | None:
    """A regular expression for the shape every example shares, when at least two
    string examples share one with a separator in it (``America/New_York`` and
    ``Europe/London``: a word, ``/``, a word; ``2024-01-31``: digits, ``-``, ...).
    Given only "Tokyo", the model otherwise writes the bare name; held to the shape it
    writes ``Asia/Tokyo``. Examples of different shapes (``notes/todo.txt`` and
    ``README.md``), free text and a single example give no pattern."""
    if len(examples) < 2 or not all(isinstance(e, str) for e in examples):
        return None
    shapes = {_shape(e) for e in examples}
    if len(shapes) != 1:
        return None
    shape = shapes.pop()
    if shape is None or all(part in ("w", "d") for part in shape):
        return None
    pieces = {"w": f"[A-Za-z_]{{1,{MAX_SHAPE_WORD}}}", "d": f"[0-9]{{1,{MAX_SHAPE_DIGITS}}}"}
    body = "".join(pieces.get(part) or re.escape(part) for part in shape)
    # The one leading space every string value starts with in the prompt (``_spaced``).
    return f"^ ?{body}$"


_WORDS = re.compile(r"[a-z]+")


STEM_CHARS = 5


def _stems(text: str) -> set[str]:
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", text).lower()
    return {w[:STEM_CHARS] for w in _WORDS.findall(spaced) if len(w) >= 3 and w not in STOPWORDS}


def request_overlap(tools: Sequence[ToolSpec], request: str) -> float:
    """The largest share of the request's content words (first five letters) that one
    tool's name, description or parameters (names and descriptions) also use; 0.0 when
    the request has no content word ("What is 45 * 12?")."""
    return max(tool_overlaps(tools, request, notes=True), default=0.0)


def tool_overlaps(tools: Sequence[ToolSpec], request: str, *, notes: bool = False) -> list[float]:
    """For each tool, the share of the request's content words its name, description
    and parameter names use (with ``notes``, the parameters' descriptions too: those
    carry example values, e.g. a ``convert_time`` parameter's "e.g., 'Asia/Tokyo'",
    which say nothing about what the tool does)."""
    asked = _stems(request)
    if not asked:
        return [0.0 for _ in tools]
    return [len(shared_words(spec, request, notes=notes)) / len(asked) for spec in tools]


def shared_words(
    spec: ToolSpec, request: str, *, notes: bool = False, name_only: bool = False
) -> frozenset[str]:
    """The request's content words (first five letters) that ``spec``'s name,
    description and parameter names use (with ``notes``, its parameters' descriptions
    too; with ``name_only``, its name alone): what :func:`tool_overlaps` counts."""
    name = spec.name.replace("_", " ").replace(".", " ")
    if name_only:
        return frozenset(_stems(request) & _stems(name))
    props = spec.parameters.get("properties") or {}
    described = (
        " ".join(str(p.get("description", "")) for p in props.values() if isinstance(p, Mapping))
        if notes
        else ""
    )
    told = _stems(f"{name} {spec.description} {' '.join(props)} {described}")
    return frozenset(_stems(request) & told)


def output_schema(
    tools: Sequence[ToolSpec],
    mode: Mode,
    bounds: GrammarBounds,
    request: lgr.Grounding | None = None,
) -> dict[str, Any]:
    """The JSON Schema every model turn is constrained to (see the module docstring).
    With ``request`` (the user's text and the results since), arguments are grounded
    in it (:func:`local_ground.grounded_arguments`)."""
    options: list[dict[str, Any]] = []
    if mode in ("tools", "both"):
        for spec in tools:
            options.append(
                {
                    "type": "object",
                    "properties": {
                        "tool": {"const": spec.name},
                        "arguments": _bounded(lgr.grounded_arguments(spec, request), bounds, 0),
                    },
                    "required": ["tool", "arguments"],
                    "additionalProperties": False,
                }
            )
    if mode in ("answer", "both") or not options:
        options.append(
            {
                "type": "object",
                "properties": {"answer": {"type": "string", "maxLength": bounds.max_answer_chars}},
                "required": ["answer"],
                "additionalProperties": False,
            }
        )
    return options[0] if len(options) == 1 else {"oneOf": options}


# ------------------------------------------------------------------ prompt text


def _call_json(name: str, arguments: Mapping[str, Any]) -> str:
    return json.dumps({"tool": name, "arguments": _spaced(arguments)}, ensure_ascii=False)


def _spaced(value: Any) -> Any:
    """Prefix every string argument with one space in the prompt.

    Why: in the user's text a value follows a space ("What is (3 + 5) * 8?"), so it is
    tokenized as " (" + "3"...; a JSON string starting right after the quote would need
    the unspaced token "(" and a small model then skips or garbles the first character.
    :func:`loopwright.providers.local_output.parse_output` strips that one leading
    space again.
    """
    if isinstance(value, str):
        return " " + value
    if isinstance(value, Mapping):
        return {k: _spaced(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_spaced(v) for v in value]
    return value


# How a turn's output begins, as the worked examples write it (``Assistant: {"tool": "``):
# the provider scores the allowed tool names as continuations of this text.
OUTPUT_HEAD = ' {"'
CALL_HEAD = OUTPUT_HEAD + 'tool": "'


def kind_options(call_head: str | None = None) -> tuple[str, str]:
    """The continuations of the ``Assistant:`` cue that start a tool call (or, given
    ``call_head``, e.g. a plan line's ``Plan:``) and an answer, as the examples write
    them."""
    call = " " + call_head if call_head is not None else OUTPUT_HEAD + 'tool":'
    return call, OUTPUT_HEAD + 'answer":'


def name_option(name: str) -> str:
    """The continuation of :data:`CALL_HEAD` that names tool ``name`` (through the
    comma that follows it in the examples)."""
    return json.dumps(name, ensure_ascii=False)[1:] + ","


def _answer_json(text: str) -> str:
    return json.dumps({"answer": text}, ensure_ascii=False)


def _question(spec: ToolSpec, args: Mapping[str, Any]) -> str:
    shown = ", ".join(
        str(v) if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in args.values()
    )
    summary = _first_sentence(spec.description).rstrip(".")
    return render("question", summary=summary, arguments=shown)


def render_example(spec: ToolSpec, variant: int = 0) -> str:
    """One worked example for ``spec``, generated from its schema: a request built from
    the description and example arguments, and the call it maps to."""
    args = example_arguments(spec.parameters, variant=variant)
    return render("example", question=_question(spec, args), call=_call_json(spec.name, args))


def _fake_result(spec: ToolSpec) -> int:
    """A stand-in result for examples (the real output is unknown before a call)."""
    return 10 + sum(spec.name.encode("utf-8")) % 90


def render_chain_example(first: ToolSpec, second: ToolSpec) -> str:
    """A two-step worked example: ``second`` takes ``first``'s result as its first
    numeric argument, then the answer states the last result. It teaches that a result
    can feed the next call. Empty when ``second`` has no numeric argument."""
    args1 = example_arguments(first.parameters)
    args2 = example_arguments(second.parameters, variant=1)
    r1, r2 = _fake_result(first), _fake_result(second)
    props = second.parameters.get("properties") or {}
    for key in args2:
        kind = (props.get(key) or {}).get("type")
        if kind in ("number", "integer"):
            args2[key] = r1
            break
    else:
        return ""
    return render(
        "chain_example",
        question=_question(first, args1),
        next=_first_sentence(second.description).rstrip(".").lower(),
        call1=_call_json(first.name, args1),
        result1=str(r1),
        call2=_call_json(second.name, args2),
        result2=str(r2),
        answer=_answer_json(answer_sentence("", str(r2))),
    )


def _plan_safe(text: str) -> str:
    """Text usable as a plan step's ``expr`` (the grammar excludes ``=``, ``"``, newlines)."""
    cleaned = " ".join(text.replace("=", " ").replace('"', "'").split())
    return cleaned[: lp_plan.MAX_EXPR_CHARS].rstrip(" ,")


def _plan_request(spec: ToolSpec, args: Mapping[str, Any]) -> tuple[str, str]:
    """(request, step expr) for a one-step worked example."""
    expression = lp_plan.result_expression(spec, args)
    if expression is not None:
        return f"What is {expression}?", expression
    question = _question(spec, args)
    return question, _plan_safe(question)


def render_plan_example(spec: ToolSpec, variant: int = 0) -> str:
    """A one-step plan example for ``spec``, generated from its schema/description."""
    args = example_arguments(spec.parameters, variant=variant)
    question, expr = _plan_request(spec, args)
    plan = lp_plan.render_plan([lp_plan.PlanStep(expr, spec.name, args)], [spec])
    return render("plan_example", question=question, plan=plan)


def render_plan_chain(first: ToolSpec, second: ToolSpec, variant: int = 0) -> str:
    """A two-step plan example: ``second`` takes ``first``'s result (``result``) as its
    first numeric argument; the later call, its result and the answer follow. Empty when
    ``second`` has no numeric argument."""
    slot = lp_plan.first_numeric(second)
    if slot is None:
        return ""
    args1 = example_arguments(first.parameters, variant=variant)
    args2: dict[str, Any] = example_arguments(second.parameters, variant=variant + 1)
    args2[slot] = lp_plan.RESULT_REF
    r1, r2 = _fake_result(first), _fake_result(second)
    e1 = lp_plan.result_expression(first, args1)
    e2 = lp_plan.result_expression(second, args2)
    if e1 is not None and e2 is not None:
        question = "What is " + e2.replace(lp_plan.RESULT_WORD, f"({e1})", 1) + "?"
        expr1, expr2 = e1, e2
    else:
        question1, expr1 = _plan_request(first, args1)
        summary = _first_sentence(second.description).rstrip(".").lower()
        question = f"{question1}, then {summary} with the result"
        expr2 = _plan_safe(f"{summary} with the result")
    steps = [
        lp_plan.PlanStep(expr1, first.name, args1),
        lp_plan.PlanStep(expr2, second.name, args2),
    ]
    return render(
        "plan_chain_example",
        question=question,
        plan=lp_plan.render_plan(steps, [first, second]),
        result1=str(r1),
        call2=_call_json(second.name, {**args2, slot: r1}),
        result2=str(r2),
        answer=_answer_json(answer_sentence(question, str(r2))),
    )


def answer_sentence(question: str, result: str) -> str:
    """The answer a worked example gives: one sentence stating the result (``What is
    (12 + 30) * 7?`` -> ``(12 + 30) * 7 = 37.``), as grounded answers are written."""
    asked = question.strip()
    if asked.startswith("What is ") and asked.endswith("?"):
        return f"{asked[len('What is ') : -1]} = {result}."
    return f"The result is {result}."


def _plan_examples(tools: Sequence[ToolSpec]) -> str:
    """One-step examples for tools that no two-step example starts with, then two-step
    examples (a small model ends its plan the way the nearest examples do, so tools
    that can chain are shown chaining).

    Two-step examples are grouped by the tool that takes the result. The order matters
    to a 270M model (it leans on the nearest examples): grouped this way it solved 9/12
    of the dev questions in ``benchmarks/multistep_eval.py``; grouped by the first tool
    6/12, round-robin 10/12 but not "(3 + 5) * 8" (see benchmarks/notes/embedded.md)."""
    pairs = [
        (a, b) for b in tools if lp_plan.first_numeric(b) is not None for a in tools if a is not b
    ][:MAX_CHAIN_EXAMPLES]
    chained = {a.name for a, _ in pairs}
    alone = [t for t in tools if t.name not in chained]
    rounds = max((example_count(t.parameters) for t in alone), default=1)
    singles = "".join(
        render_plan_example(spec, i)
        for i in range(rounds)
        for spec in alone
        if i < example_count(spec.parameters)
    )
    return singles + "".join(render_plan_chain(a, b, i) for i, (a, b) in enumerate(pairs))


MAX_CHAIN_EXAMPLES = 6


def _plan_tool_line(spec: ToolSpec) -> str:
    """A tool as a plan step with parameter names for values, e.g. ``a + b = add(a, b)``
    (or ``<description> = get_weather(city)``): the same shape the model writes, so the
    step it is writing points straight at the matching tool."""
    params = lp_plan.positional_params(spec)
    names = {p: p for p in params}
    expression = lp_plan.result_expression(spec, names)
    what = expression or _plan_safe(_first_sentence(spec.description).rstrip("."))
    return render(
        "plan_tool",
        what=what,
        call=f"{spec.name}({', '.join(params)})",
        description=_first_sentence(spec.description),
        arguments=describe_parameters(spec.parameters),
    )


def _tool_description(text: str, plan: bool) -> str:
    """The first sentence; in plan mode the whole (bounded) description, because a plan
    step maps a part of the request to a tool and the later sentences often say how
    (e.g. "Returns a + b.")."""
    if not plan:
        return _first_sentence(text)
    line = " ".join(text.strip().split())
    return line if len(line) <= MAX_PLAN_DESCRIPTION else _first_sentence(line)


MAX_PLAN_DESCRIPTION = 160


def render_prefix(tools: Sequence[ToolSpec], system: str | None, *, plan: bool = False) -> str:
    """Everything before the conversation: stable across the turns of one run. With
    ``plan`` the worked examples and preamble teach plan lines (see ``local_plan``)."""
    lines = [
        render(
            "tool",
            name=spec.name,
            description=_tool_description(spec.description, plan),
            arguments=describe_parameters(spec.parameters),
            example=_call_json(spec.name, example_arguments(spec.parameters)),
        )
        for spec in tools
    ]
    if plan:
        lines = [_plan_tool_line(spec) for spec in tools]
        # No direct-answer example here: with one, plans of the multi-step benchmark
        # got worse (12/20 vs 14/20, benchmarks/README.md "Embedded model").
        examples = _plan_examples(tools)
        text = render("preamble_plan", examples=examples, tools="\n".join(lines))
        if system and system.strip():
            text += render("system", text=" ".join(system.split()))
        return text
    # Worked examples from a tool's own schema only when the schema gives example
    # values: values made up from a parameter's name ("start location") were copied
    # into real calls. Other tools learn from the fixed examples on invented tools
    # (``grounded/examples``), which show values taken from the request.
    shown = [t for t in tools if has_examples(t.parameters)]
    # Round-robin over tools so no tool's examples sit all together (small models copy
    # whatever example is nearest).
    rounds = max((example_count(t.parameters) for t in shown), default=1)
    examples = "".join(
        render_example(spec, i)
        for i in range(rounds)
        for spec in shown
        if i < example_count(spec.parameters)
    )
    # Chains between tools whose numeric inputs can take a previous (numeric) result.
    if len(shown) > 1:
        pairs = [(shown[i], shown[(i + 1) % len(shown)]) for i in range(min(3, len(shown)))]
        examples += "".join(render_chain_example(a, b) for a, b in pairs if a is not b)
    answers = render("grounded/examples", no_tool=render("grounded/no_tool"))
    text = render("preamble", answers=answers, examples=examples, tools="\n".join(lines))
    if system and system.strip():
        text += render("system", text=" ".join(system.split()))
    return text


def render_message(message: Message) -> str:
    """One history message as prompt text (never ends with a space)."""
    out: list[str] = []
    plan = lp_plan.plan_text(message)
    if plan is not None:
        # The plan line stands for its first call, which is not shown again.
        return render("assistant_plan", plan=plan)
    for part in message.parts:
        match part:
            case TextPart(text=text) if message.role == "user":
                out.append(render("user", text=text.strip()))
            case TextPart(text=text) if message.role == "assistant" and text.strip():
                out.append(render("assistant", json=_answer_json(text.strip())))
            case TextPart(text=text) if message.role == "system":
                out.append(render("system", text=" ".join(text.split())))
            case ToolCallPart(name=name, arguments=arguments):
                out.append(render("assistant", json=_call_json(name, arguments)))
            case ToolResultPart(content=content, is_error=True, error_kind=kind):
                out.append(
                    render("error_result", kind=str(kind or "error"), content=content.strip())
                )
            case ToolResultPart(content=content):
                out.append(render("result", content=result_text(content).strip()))
            case TextPart() | ReasoningPart():
                pass  # reasoning is not replayed to a model that cannot produce it
    return "".join(out)


def result_text(content: str) -> str:
    """A tool result as the model reads it. A result the dispatcher wrapped as untrusted
    data (``core.untrusted``) is shown unwrapped: on a ``Result:`` line it is already
    data by its position in the few-shot format, the base model cannot act on an
    instruction either way, and the wrapper's notice and nonce were copied into answers
    (and the nonce's digits into the numbers an answer may use)."""
    inner = unwrap_untrusted(content)
    return content if inner is None else inner


def cue() -> str:
    return render("cue")
