"""A Python assertion for router_suite.yaml: the output must pass the router parser."""

from __future__ import annotations

from loopwright.prompts import OutputParseError, load_pattern


def valid_router_output(output: str, parsed: dict | None) -> bool | str:
    try:
        load_pattern("router").parse(output, allowed_tools=["web_search", "calculator"])
    except OutputParseError as exc:
        return str(exc)
    return True
