"""Shared pytest fixtures for tools/: the repo root and ../shared/samples (same layout in CI)."""
import os
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:      # `import tools.…` whatever directory pytest is started from
    sys.path.insert(0, str(REPO_ROOT))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def samples_dir() -> Path:
    """$DEPTHBATCH_SAMPLES, else ../shared/samples beside the checkout (REPO_ROOT is resolved on the file
    system, so a checkout reached through a link finds the real ../shared)."""
    env = os.environ.get("DEPTHBATCH_SAMPLES")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "samples"


def pytest_configure(config):
    config.addinivalue_line("markers", "heavy: slowest parity cases (still run by default)")
