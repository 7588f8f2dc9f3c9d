"""Shared pytest fixtures for tools/: the repo root and ../shared/samples (same layout in CI)."""
import os
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:      # `import tools.…` whatever directory pytest is started from
    sys.path.insert(0, str(REPO_ROOT))


def reference(module: str, reason: str):
    """Import a test-only reference package (tools/requirements-crosscheck.txt) or skip, saying `reason`. With
    $DEPTHBATCH_REQUIRE_REFERENCES set (scripts/test, once they installed) a missing one fails instead: a
    cross-check CI installed must run, never skip. Call it from a fixture, so that the failure is that test's
    error, not a collection error that stops the whole run."""
    if os.environ.get("DEPTHBATCH_REQUIRE_REFERENCES"):
        try:
            return __import__(module)
        except ImportError as e:
            pytest.fail(f"{module} is required here (DEPTHBATCH_REQUIRE_REFERENCES) but does not import: {e}",
                        pytrace=False)
    return pytest.importorskip(module, reason=reason)


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
