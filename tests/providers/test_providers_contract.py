"""The shared contract suite, parametrised over every wire kit (see contract.py)."""

from __future__ import annotations

import pytest
from contract import ERROR_KINDS, SCENARIOS, Run, error_kind, load_kits
from fakeserver import FakeServer

KITS = load_kits()
KIT_IDS = [k.name for k in KITS]


@pytest.fixture
def server():
    with FakeServer() as fake:
        yield fake


@pytest.mark.parametrize("kit", KITS, ids=KIT_IDS)
@pytest.mark.parametrize("scenario", list(SCENARIOS))
async def test_contract_scenario(kit, scenario, server):
    await SCENARIOS[scenario](Run(kit, server))


@pytest.mark.parametrize("kit", KITS, ids=KIT_IDS)
@pytest.mark.parametrize("kind", ERROR_KINDS)
async def test_contract_error_kind(kit, kind, server):
    await error_kind(Run(kit, server), kind)
