"""``mcd server`` benchmark: latency of ``GET /config/<pool>`` beside a static file server.

``mcd server`` runs as a real process (plain port, no tokens) over the fake API server with a
pool whose rendered config has 100 files (~60 KB served). Baseline, in the same run: Python's
own static file server (``python -m http.server``, a process too) serving the same bytes
from a file. Requests alternate between the two, one at a time, from one client; the
figures are p99 (and p50) wall times per request. Each mcd request reads the pool, the
rendered config, the ControllerConfig and the CA ConfigMap from the API server (upstream
reads informer caches), builds and converts the document: the ratio is the price of that.
"""

from __future__ import annotations

import http.client
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import Row, ratio_check
from mcd.model.ignition.dataurl import encode_data_url
from tests.fakes.apiserver import FakeApiServer
from tests.fakes.kubecluster import write_kubeconfig

ACCEPT = "application/vnd.coreos.ignition+json;version=3.3.0, */*;q=0.1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("server did not start") from None
            time.sleep(0.05)


def _get(port: int, path: str) -> tuple[float, bytes]:
    start = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers={"Accept": ACCEPT})
        response = conn.getresponse()
        body = response.read()
        assert response.status == 200, response.status
    finally:
        conn.close()
    return time.perf_counter() - start, body


def _p99(times: list[float]) -> float:
    return statistics.quantiles(times, n=100)[98]


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def bench_server(requests: int = 300) -> list[Row]:
    api = FakeApiServer().start()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            kubeconfig = write_kubeconfig(Path(tmp) / "kubeconfig", api.url)
            files = [
                {"path": f"/etc/bench/f{i}", "mode": 0o644,
                 "contents": {"source": encode_data_url(os.urandom(256))}}
                for i in range(100)
            ]  # fmt: skip
            config = {"ignition": {"version": "3.5.0"}, "storage": {"files": files}}
            mc = {
                "apiVersion": "machineconfiguration.openshift.io/v1",
                "kind": "MachineConfig",
                "metadata": {"name": "rendered-worker-1"},
                "spec": {"config": config},
            }
            g = "machineconfiguration.openshift.io"
            api.create("machineconfigs", mc, group=g)
            pool = {"apiVersion": "machineconfiguration.openshift.io/v1",
                    "kind": "MachineConfigPool", "metadata": {"name": "worker"},
                    "spec": {"configuration": {"name": "rendered-worker-1"}}}  # fmt: skip
            pool["status"] = {"configuration": {"name": "rendered-worker-1"}}
            api.create("machineconfigpools", pool, group=g)
            mcd_port, static_port = _free_port(), _free_port()
            mcd = [str(Path(sys.executable).parent / "mcd"), "server", "--kubeconfig",
                   str(kubeconfig), "--bind-address", "127.0.0.1", "--secure-port", "0",
                   "--insecure-port", str(mcd_port), "-q"]  # fmt: skip
            procs.append(
                subprocess.Popen(mcd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            )
            _wait(mcd_port, procs[-1])
            _, body = _get(mcd_port, "/config/worker")
            (Path(tmp) / "config").mkdir()
            (Path(tmp) / "config/worker").write_bytes(body)
            static = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1",
                      "--directory", tmp, str(static_port)]  # fmt: skip
            procs.append(
                subprocess.Popen(static, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            )
            _wait(static_port, procs[-1])
            mine: list[float] = []
            base: list[float] = []
            for _ in range(requests):
                mine.append(_get(mcd_port, "/config/worker")[0])
                base.append(_get(static_port, "/config/worker")[0])
    finally:
        for proc in procs:
            _stop(proc)
        api.stop()
    p99, base99 = _p99(mine), _p99(base)
    p50, base50 = statistics.median(mine), statistics.median(base)
    text, ok = ratio_check(p99, base99, 20)
    # make test: the medians (a p99 of 300 requests on a loaded machine is one stall)
    load_text, load_ok = ratio_check(p50, base50, 30)
    size = f"{len(body) // 1024} KB"
    return [
        Row(f"mcd server GET /config (p99, {size})", p99, base99, text, ok, "ms"),
        Row(
            f"mcd server GET /config (p50, {size})",
            p50,
            base50,
            "(report only)",
            True,
            "ms",
            load_text,
            load_ok,
        ),
    ]


if __name__ == "__main__":
    from bench.common import print_table

    print_table(bench_server())
