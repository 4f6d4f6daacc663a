"""Prompt regression testing (docs/prompts.md): cases, assertions, pass rates, thresholds.

A suite renders one template per case, sends it to any core ``Model`` N times, checks
each output against the case's assertions, and reports the pass rate per case and
overall. The run fails when the overall rate is below the threshold (LLM output is not
deterministic: require, say, 90%, not 100%).

Assertions (YAML spelling in brackets):

* ``json_valid`` -- a JSON object can be read from the output (code fences, an
  ``<action>`` tag and prose around it are tolerated, as the pattern parsers do);
* ``json_strict`` -- the whole output is one JSON object;
* ``has_field: a.b`` / ``no_field: apology`` -- a (dotted) field is present / absent;
* ``field_in: {field: tool_name, values: [calculator]}``;
* ``max_tokens: 200`` -- the output is at most that many tokens (the model's reported
  output tokens, else the estimate);
* ``regex: '"confidence":'`` -- ``re.search`` matches the output;
* ``callable: "package.module:function"`` -- ``function(output, parsed)`` returns
  ``True``/``None`` (pass), ``False`` or a failure message (fail).

Suite files are YAML; see ``docs/prompts.md`` and ``examples/prompts/``.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

import yaml

from loopwright.core.estimate import estimate_tokens
from loopwright.core.events import ResponseDone
from loopwright.core.messages import JSONValue, Message
from loopwright.core.protocols import Model, ModelRequest, ModelSettings, complete
from loopwright.prompts.patterns import builtin_registry, extract_json
from loopwright.prompts.registry import PromptRegistry
from loopwright.prompts.template import PromptError, PromptTemplate

KINDS: Final = (
    "json_valid",
    "json_strict",
    "has_field",
    "no_field",
    "field_in",
    "max_tokens",
    "regex",
    "callable",
)
_MISSING: Final = object()


class SuiteError(PromptError):
    """A suite file or case is malformed; the message names the place and the fix."""


def _field(value: object, path: str) -> object:
    cur = value
    for key in path.split("."):
        if isinstance(cur, dict) and key in cur:
            cur = cur[key]
        elif isinstance(cur, list) and key.isdigit() and int(key) < len(cur):
            cur = cur[int(key)]
        else:
            return _MISSING
    return cur


@dataclass(frozen=True, slots=True)
class PromptAssertion:
    """One check of a model output (see module docstring for the kinds)."""

    kind: str
    field: str = ""
    values: tuple[JSONValue, ...] = ()
    limit: int = 0
    pattern: str = ""
    target: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise SuiteError(
                f"unknown assertion {self.kind!r}; expected one of: {', '.join(KINDS)}"
            )
        needs = {
            "has_field": "field",
            "no_field": "field",
            "field_in": "field",
            "regex": "pattern",
            "callable": "target",
        }
        attr = needs.get(self.kind)
        if attr and not getattr(self, attr):
            raise SuiteError(f"assertion {self.kind!r} needs {attr!r}")
        if self.kind == "max_tokens" and self.limit <= 0:
            raise SuiteError("assertion 'max_tokens' needs a positive limit")
        if self.kind == "regex":
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise SuiteError(
                    f"assertion regex {self.pattern!r} does not compile: {exc}"
                ) from exc
        if self.kind == "callable" and ":" not in self.target:
            raise SuiteError(f"assertion callable {self.target!r} must be 'module:function'")

    @classmethod
    def from_spec(cls, spec: object) -> PromptAssertion:
        """From YAML: ``"json_valid"``, ``{has_field: x}``, ``{field_in: {field, values}}``,
        ``{max_tokens: 200}``, ``{regex: ...}``, ``{callable: m:f}`` or seed-style
        ``{type: has_field, field: x}``."""
        if isinstance(spec, str):
            return cls(spec)
        if not isinstance(spec, dict):
            raise SuiteError(f"an assertion must be a name or a mapping, got {spec!r}")
        if "type" in spec:
            d = dict(spec)
            kind = str(d.pop("type"))
            return cls._build(
                kind,
                d.get("field", ""),
                d.get("values", ()),
                d.get("limit", 0),
                d.get("pattern", ""),
                d.get("target", ""),
            )
        if len(spec) != 1:
            raise SuiteError(f"an assertion mapping has one key (its kind), got {sorted(spec)}")
        kind, arg = next(iter(spec.items()))
        if kind == "field_in":
            if not isinstance(arg, dict) or "field" not in arg or "values" not in arg:
                raise SuiteError("field_in needs {field: <name>, values: [...]}")
            return cls._build("field_in", arg["field"], arg["values"])
        if kind in ("has_field", "no_field"):
            return cls._build(kind, arg)
        if kind == "max_tokens":
            return cls._build(kind, limit=arg)
        if kind == "regex":
            return cls._build(kind, pattern=arg)
        if kind == "callable":
            return cls._build(kind, target=arg)
        return cls(str(kind))

    @classmethod
    def _build(
        cls,
        kind: str,
        field: object = "",
        values: object = (),
        limit: object = 0,
        pattern: object = "",
        target: object = "",
    ) -> PromptAssertion:
        if not isinstance(values, (list, tuple)):
            raise SuiteError(f"assertion {kind!r}: values must be a list, got {values!r}")
        try:
            n = int(limit)  # type: ignore[call-overload]
        except (TypeError, ValueError) as exc:
            raise SuiteError(
                f"assertion {kind!r}: limit must be an integer, got {limit!r}"
            ) from exc
        return cls(kind, str(field), tuple(values), n, str(pattern), str(target))

    def check(self, output: str, output_tokens: int) -> str | None:
        """``None`` when the output passes, else why it failed (one line)."""
        parsed, _ = extract_json(output)
        k = self.kind
        if k == "json_valid":
            return None if parsed is not None else "no JSON object in the output"
        if k == "json_strict":
            try:
                return (
                    None
                    if isinstance(json.loads(output), dict)
                    else "output is JSON but not an object"
                )
            except ValueError:
                return "output is not exactly one JSON object"
        if k == "max_tokens":
            return None if output_tokens <= self.limit else f"{output_tokens} tokens > {self.limit}"
        if k == "regex":
            return None if re.search(self.pattern, output) else f"regex {self.pattern!r} not found"
        if k == "callable":
            return self._call(output, parsed)
        if parsed is None:
            return f"{k} {self.field}: no JSON object in the output"
        found = _field(parsed, self.field)
        if k == "has_field":
            return None if found is not _MISSING else f"field {self.field!r} missing"
        if k == "no_field":
            return None if found is _MISSING else f"field {self.field!r} present"
        if found is _MISSING:
            return f"field {self.field!r} missing"
        return (
            None if found in self.values else f"{self.field}={found!r} not in {list(self.values)}"
        )

    def _call(self, output: str, parsed: dict[str, JSONValue] | None) -> str | None:
        module, _, name = self.target.partition(":")
        try:
            fn = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise SuiteError(f"assertion callable {self.target!r} cannot be loaded: {exc}") from exc
        verdict = fn(output, parsed)
        if verdict is None or verdict is True:
            return None
        return (
            str(verdict)
            if isinstance(verdict, str) and verdict
            else f"{self.target} returned False"
        )


@dataclass(frozen=True, slots=True)
class PromptCase:
    """Template variables for one case, its assertions, and (for ``role: system``) the
    user message to send."""

    name: str
    variables: Mapping[str, object]
    assertions: tuple[PromptAssertion, ...]
    input: str = ""


@dataclass(frozen=True, slots=True)
class PromptSuite:
    name: str
    template: PromptTemplate
    cases: tuple[PromptCase, ...]
    runs: int = 5
    threshold: float = 0.9
    settings: ModelSettings = field(default_factory=ModelSettings)
    role: Literal["user", "system"] = "user"

    def __post_init__(self) -> None:
        if self.runs < 1:
            raise SuiteError(f"suite {self.name!r}: runs must be >= 1, got {self.runs}")
        if not 0.0 <= self.threshold <= 1.0:
            raise SuiteError(
                f"suite {self.name!r}: threshold must be in [0, 1], got {self.threshold}"
            )
        for case in self.cases:
            try:
                self.template.check_variables(case.variables)
            except PromptError as exc:
                raise SuiteError(f"suite {self.name!r} case {case.name!r}: {exc}") from exc

    def request(self, case: PromptCase) -> ModelRequest:
        text = self.template.render(case.variables)
        if self.role == "system":
            msgs = (Message.user(case.input),)
            return ModelRequest(
                msgs, str(text), settings=self.settings, metadata={"prompt_case": case.name}
            )
        return ModelRequest(
            (Message.user(str(text)),), settings=self.settings, metadata={"prompt_case": case.name}
        )


@dataclass(frozen=True, slots=True)
class CaseReport:
    name: str
    runs: int
    passes: int
    failures: tuple[tuple[str, int], ...]  # (reason, how many runs)
    samples: tuple[str, ...]  # first outputs, for debugging

    @property
    def pass_rate(self) -> float:
        return self.passes / self.runs if self.runs else 0.0


@dataclass(frozen=True, slots=True)
class SuiteReport:
    suite: str
    model: str
    fingerprint: str
    threshold: float
    cases: tuple[CaseReport, ...]
    duration_s: float

    @property
    def runs(self) -> int:
        return sum(c.runs for c in self.cases)

    @property
    def pass_rate(self) -> float:
        return sum(c.passes for c in self.cases) / self.runs if self.runs else 0.0

    @property
    def passed(self) -> bool:
        return self.pass_rate >= self.threshold

    def to_dict(self) -> dict[str, JSONValue]:
        return {
            "suite": self.suite,
            "model": self.model,
            "template": self.fingerprint,
            "threshold": self.threshold,
            "pass_rate": round(self.pass_rate, 4),
            "passed": self.passed,
            "runs": self.runs,
            "duration_s": round(self.duration_s, 3),
            "cases": [
                {
                    "name": c.name,
                    "runs": c.runs,
                    "passes": c.passes,
                    "pass_rate": round(c.pass_rate, 4),
                    "failures": [{"reason": r, "count": n} for r, n in c.failures],
                    "samples": list(c.samples),
                }
                for c in self.cases
            ],
        }

    def table(self) -> str:
        """A plain-text table (the CLI prints it; pytest shows it on failure)."""
        width = max([len(c.name) for c in self.cases] + [4])
        lines = [f"{'case':<{width}}  pass  runs  rate    first failure"]
        for c in self.cases:
            why = c.failures[0][0] if c.failures else ""
            lines.append(
                f"{c.name:<{width}}  {c.passes:>4}  {c.runs:>4}  {c.pass_rate:>5.0%}   {why[:70]}"
            )
        verdict = "PASS" if self.passed else "FAIL"
        lines.append(
            f"{verdict}: {self.pass_rate:.1%} of {self.runs} runs passed (threshold "
            f"{self.threshold:.0%}); model {self.model}; template {self.fingerprint}"
        )
        return "\n".join(lines)


async def run_suite(
    suite: PromptSuite,
    model: Model,
    *,
    runs: int | None = None,
    threshold: float | None = None,
    count: Callable[[str], int] = estimate_tokens,
    concurrency: int = 1,
) -> SuiteReport:
    """Run every case ``runs`` times against ``model``; a model error fails that run."""
    n = runs if runs is not None else suite.runs
    if n < 1:
        raise SuiteError(f"runs must be >= 1, got {n}")
    limit = asyncio.Semaphore(max(1, concurrency))
    started = time.perf_counter()

    async def one(case: PromptCase) -> tuple[str, list[str]]:
        async with limit:
            final = await complete(model, suite.request(case))
        if not isinstance(final, ResponseDone):
            return "", [f"model error: {final.error}"]
        text = final.message.text
        tokens = final.usage.output_tokens or count(text)
        return text, [r for a in case.assertions if (r := a.check(text, tokens)) is not None]

    reports = []
    for case in suite.cases:
        outcomes = await asyncio.gather(*(one(case) for _ in range(n)))
        reasons: Counter[str] = Counter()
        for _, failed in outcomes:
            reasons.update(dict.fromkeys(failed, 1))
        passes = sum(1 for _, failed in outcomes if not failed)
        samples = tuple(text[:300] for text, _ in outcomes[:3])
        reports.append(CaseReport(case.name, n, passes, tuple(reasons.most_common()), samples))
    return SuiteReport(
        suite.name,
        model.name,
        suite.template.fingerprint,
        suite.threshold if threshold is None else threshold,
        tuple(reports),
        time.perf_counter() - started,
    )


def run_suite_sync(suite: PromptSuite, model: Model, **kwargs: object) -> SuiteReport:
    """:func:`run_suite` for synchronous callers (not from inside a running event loop)."""
    return asyncio.run(run_suite(suite, model, **kwargs))  # type: ignore[arg-type]


# -- YAML ------------------------------------------------------------------------------


def load_suite(path: str | Path) -> PromptSuite:
    """Read a YAML suite file (format in ``docs/prompts.md``); errors name the field."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise SuiteError(f"cannot read suite {str(path)!r}: {exc}") from exc
    if not isinstance(data, dict):
        raise SuiteError(f"suite {str(path)!r} must be a YAML mapping")
    name = str(data.get("name") or path.stem)
    template = _load_template(data.get("template"), path.parent, name)
    cases = tuple(_load_case(c, i, name) for i, c in enumerate(_list(data, "cases", name)))
    if not cases:
        raise SuiteError(f"suite {name!r} has no cases")
    if any(a.kind == "callable" for c in cases for a in c.assertions):
        # "module:function" assertions may live next to the suite file
        folder = str(path.parent.resolve())
        if folder not in sys.path:
            sys.path.append(folder)
    settings = data.get("settings") or {}
    if not isinstance(settings, dict):
        raise SuiteError(f"suite {name!r}: settings must be a mapping")
    allowed = {"temperature", "max_tokens", "seed", "stop"}
    unknown = set(settings) - allowed
    if unknown:
        raise SuiteError(
            f"suite {name!r}: unknown settings {sorted(unknown)}; allowed: {sorted(allowed)}"
        )
    if "stop" in settings:
        settings["stop"] = tuple(settings["stop"])
    role = data.get("role", "user")
    if role not in ("user", "system"):
        raise SuiteError(f"suite {name!r}: role must be 'user' or 'system', got {role!r}")
    return PromptSuite(
        name,
        template,
        cases,
        int(data.get("runs", 5)),
        float(data.get("threshold", 0.9)),
        ModelSettings(**settings),
        role,
    )


def _list(data: Mapping[str, object], key: str, suite: str) -> Sequence[object]:
    value = data.get(key) or []
    if not isinstance(value, list):
        raise SuiteError(f"suite {suite!r}: {key} must be a list")
    return value


def _load_template(spec: object, base: Path, suite: str) -> PromptTemplate:
    if not isinstance(spec, dict):
        raise SuiteError(
            f"suite {suite!r}: template must be a mapping with one of builtin, registry+name, "
            "file or text"
        )
    version = str(spec.get("version", "latest"))
    if "builtin" in spec:
        return builtin_registry().get(str(spec["builtin"]), version)
    if "registry" in spec:
        if "name" not in spec:
            raise SuiteError(f"suite {suite!r}: template registry needs the prompt's name too")
        return PromptRegistry(base / str(spec["registry"])).get(str(spec["name"]), version)
    if "file" in spec:
        file = base / str(spec["file"])
        try:
            text = file.read_text("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SuiteError(
                f"suite {suite!r}: cannot read template file {str(file)!r} ({exc}); "
                "give a path relative to the suite file"
            ) from None
        return PromptTemplate(str(spec.get("name", file.stem)), str(spec.get("version", "0")), text)
    if "text" in spec:
        return PromptTemplate(
            str(spec.get("name", suite)), str(spec.get("version", "0")), str(spec["text"])
        )
    raise SuiteError(f"suite {suite!r}: template needs one of builtin, registry+name, file or text")


def _load_case(spec: object, index: int, suite: str) -> PromptCase:
    if not isinstance(spec, dict):
        raise SuiteError(f"suite {suite!r} case #{index + 1} must be a mapping")
    name = str(spec.get("name") or f"case {index + 1}")
    variables = spec.get("vars") or {}
    if not isinstance(variables, dict):
        raise SuiteError(f"suite {suite!r} case {name!r}: vars must be a mapping")
    raw = spec.get("assert") or []
    if not isinstance(raw, list) or not raw:
        raise SuiteError(f"suite {suite!r} case {name!r}: assert must be a non-empty list")
    try:
        assertions = tuple(PromptAssertion.from_spec(a) for a in raw)
    except SuiteError as exc:
        raise SuiteError(f"suite {suite!r} case {name!r}: {exc}") from exc
    return PromptCase(name, variables, assertions, str(spec.get("input", "")))
