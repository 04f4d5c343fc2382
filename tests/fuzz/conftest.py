"""The hypothesis profiles of the property-based tests, and their subjects: the fuzz apps
(tests/fuzz/support.py) as in-process ASGI clients on one event loop per module.

Profiles: ``ci``, the default (``make test``): derandomized, so every run tries the same
examples, and bounded so the folder stays quick; ``fuzz`` (``make fuzz``, ``python -m
tests.fuzz``): many more examples from a fresh seed. Neither keeps an example database:
nothing is written in the repository. The profile is the ``HANDLER_KIT_FUZZ_PROFILE``
environment variable's (the runner sets it), or pytest's ``--hypothesis-profile`` option.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.configuration import set_hypothesis_home_dir

from handler_kit import create_asgi_app
from tests.fuzz.support import CONFIG, asgi_client, inputs_app, outputs_app

# Hypothesis keeps caches (constants of the code under test, Unicode tables) under
# ./.hypothesis even without an example database: in the temporary folder instead, so nothing
# is written in the repository.
if not os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
    set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "handler-kit-hypothesis")

# The fuzz profile's examples per property; `make fuzz FUZZ_EXAMPLES=...` changes it.
FUZZ_EXAMPLES = int(os.environ.get("HANDLER_KIT_FUZZ_EXAMPLES", "20000"))

settings.register_profile(
    "ci",
    max_examples=100,
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=True,
    # a loaded 2-core machine makes data generation look slow; that is not the test's fault
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "fuzz",
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HANDLER_KIT_FUZZ_PROFILE", "ci"))


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.Runner]:
    """One event loop for a module's examples (a new loop per example would cost more than
    the example)."""
    with asyncio.Runner() as runner:
        yield runner


@pytest.fixture(scope="module")
def inputs_http(loop: asyncio.Runner) -> Iterator[httpx.AsyncClient]:
    client = asgi_client(create_asgi_app(inputs_app, CONFIG))
    yield client
    loop.run(client.aclose())


@pytest.fixture(scope="module")
def outputs_http(loop: asyncio.Runner) -> Iterator[httpx.AsyncClient]:
    client = asgi_client(create_asgi_app(outputs_app, CONFIG))
    yield client
    loop.run(client.aclose())
