"""``get_weather``: deterministic DEMO weather (no network, not real data).

The same city (case- and space-insensitive) always gets the same report, derived from a
hash of its name, so demos and tests are reproducible. Every result says it is demo data.
"""

from __future__ import annotations

import hashlib

from loopwright.core.errors import ToolError, ToolErrorKind
from loopwright.core.text import lone_surrogate
from loopwright.core.tools import ToolSpec

DEMO_NOTE = "demo data, not a real forecast"
_CONDITIONS = ("sunny", "partly cloudy", "cloudy", "light rain", "rain", "windy", "foggy", "snow")
MAX_CITY_CHARS = 100

SPEC = ToolSpec(
    name="get_weather",
    # Only the first sentence is shown to the embedded model; the second gives the
    # words a request for one field uses ("Give me the wind speed for Dublin" shares
    # no word with the first and went to the calculator).
    description=(
        "Get the current weather for a city (demo data, not a real forecast). "
        "Reports the temperature, condition, humidity and wind speed."
    ),
    parameters={
        "type": "object",
        "properties": {
            "city": {
                "type": "string",
                "description": "city name, e.g. Paris",
                "examples": ["Paris", "Tokyo"],
                "minLength": 1,
                "maxLength": MAX_CITY_CHARS,
            }
        },
        "required": ["city"],
        "additionalProperties": False,
    },
    idempotent=True,
    timeout=5.0,
)


def get_weather(city: str) -> dict[str, object]:
    """Return a demo weather report for ``city`` (labelled ``source: demo data``)."""
    name = " ".join(str(city).split())
    if not name:
        raise ToolError(
            "city is empty; pass a city name such as 'Paris'", kind=ToolErrorKind.INVALID_ARGUMENTS
        )
    if lone_surrogate(name) is not None:  # sha256 of its UTF-8 below: UnicodeEncodeError
        raise ToolError(
            "city holds an unpaired surrogate; pass the name as valid Unicode text",
            kind=ToolErrorKind.INVALID_ARGUMENTS,
        )
    if len(name) > MAX_CITY_CHARS:
        raise ToolError(
            f"city is longer than {MAX_CITY_CHARS} characters; pass just the name",
            kind=ToolErrorKind.INVALID_ARGUMENTS,
        )
    digest = hashlib.sha256(name.casefold().encode("utf-8")).digest()
    condition = _CONDITIONS[digest[0] % len(_CONDITIONS)]
    low = -5 if condition == "snow" else 5
    temperature = low + digest[1] % 26
    return {
        "city": name,
        "temperature_c": temperature,
        "condition": condition,
        "humidity_pct": 30 + digest[2] % 61,
        "wind_kph": digest[3] % 41,
        "source": DEMO_NOTE,
    }
