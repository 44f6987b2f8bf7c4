"""Fixtures of the API tests: ``model``, an opened model with validation on, parametrized indirectly by
``(folder, file)`` under the test assets; the test fails on any validation message it produced."""

from __future__ import annotations

import pytest

import vkmorph
from tests.helpers import asset


@pytest.fixture
def model(request):
    m = vkmorph.open(asset(*request.param), validation=True)
    yield m
    m.close()
    assert not m.messages, "\n".join(map(str, m.messages))
