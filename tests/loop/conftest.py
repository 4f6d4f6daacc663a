from __future__ import annotations

import pytest
from loop_helpers import FakeSleep


@pytest.fixture
def fake_sleep() -> FakeSleep:
    return FakeSleep()
