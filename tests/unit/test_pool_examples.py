"""The README's quick start files render, and their pools parse (executable docs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from mcd.model.drain.settings import drain_settings
from mcd.model.pool.pools import labels_of, max_unavailable, selector_matches
from mcd.model.pool.render import render
from mcd.model.pool.windows import WINDOW_ANNOTATION

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "pools"


def load(name: str) -> dict[str, Any]:
    doc = yaml.safe_load((EXAMPLES / name).read_text())
    assert isinstance(doc, dict)
    return doc


def test_the_quick_start_renders_for_both_pools() -> None:
    configs = [load("00-worker.yaml"), load("50-worker-chrony.yaml")]
    worker, infra = load("worker.yaml"), load("infra.yaml")
    for pool in (worker, infra):
        selected = [c for c in configs
                    if selector_matches(pool["spec"]["machineConfigSelector"], labels_of(c))]  # fmt: skip
        assert len(selected) == 2
        out = render(pool["metadata"]["name"], selected)
        assert out.name.startswith(f"rendered-{pool['metadata']['name']}-")
        paths = [f["path"] for f in out.spec["config"]["storage"]["files"]]
        assert paths == ["/etc/motd", "/etc/chrony.d/50-pool.conf"]
        assert out.spec["kernelArguments"] == ["nosmt"]
    assert max_unavailable(worker["spec"]["maxUnavailable"], 10) == 2
    assert max_unavailable(infra["spec"]["maxUnavailable"], 30) == 3
    # the quick start rolls out at once, any day (issue 40: a weekend window made it wait)
    assert WINDOW_ANNOTATION not in worker["metadata"]["annotations"]


def test_the_worker_pools_drain_timeout() -> None:
    settings = drain_settings(load("worker.yaml")["metadata"]["annotations"])
    assert (settings.timeout, settings.error) == (7200.0, "")
