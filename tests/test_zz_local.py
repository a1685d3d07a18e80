from pathlib import Path

import pytest
from test_consumer import test_a_consumer_without_memspec_gets_every_release_whole  # noqa


@pytest.fixture(scope="session")
def built_dist() -> Path:
    return Path("/tmp/dint")
