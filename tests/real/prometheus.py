"""A real Prometheus server (Debian package ``prometheus``) on 127.0.0.1 for a test: it scrapes
the given targets every second, evaluates the given rules every second, and answers
``/api/v1/alerts`` and ``/api/v1/query``. Its data lives in the test's temp dir; it is
stopped by its own pid."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import yaml

Obj = dict[str, Any]


class PrometheusServer:
    def __init__(self, binary: str, workdir: Path, port: int) -> None:
        self.binary, self.workdir, self.port = binary, workdir, port
        workdir.mkdir(parents=True, exist_ok=True)
        self.log_path = workdir / "prometheus.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, scrape_configs: list[Obj], rules: Obj) -> PrometheusServer:
        (self.workdir / "rules.yaml").write_text(yaml.safe_dump(rules))
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s",
                       "scrape_timeout": "1s"},
            "rule_files": [str(self.workdir / "rules.yaml")],
            "scrape_configs": scrape_configs,
        }  # fmt: skip
        (self.workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [self.binary, f"--config.file={self.workdir / 'prometheus.yml'}",
                 f"--storage.tsdb.path={self.workdir / 'data'}",
                 f"--web.listen-address=127.0.0.1:{self.port}",
                 f"--web.console.templates={self.workdir}",
                 f"--web.console.libraries={self.workdir}"],
                stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited: {self.log()[-3000:]}")
            try:
                with urllib.request.urlopen(self.url("/-/ready"), timeout=2) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"prometheus not ready after 30 s: {self.log()[-3000:]}")

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def api(self, path: str, **params: str) -> Obj:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        try:
            with urllib.request.urlopen(self.url(path) + query, timeout=10) as r:
                doc: Obj = json.loads(r.read())
        except urllib.error.HTTPError as e:  # a bad query answers 400 with the error in JSON
            doc = json.loads(e.read())
        return doc

    def alerts(self, state: str = "firing") -> list[Obj]:
        found = self.api("/api/v1/alerts")["data"]["alerts"]
        return [a for a in found if a["state"] == state]

    def targets_up(self) -> dict[str, bool]:
        active = self.api("/api/v1/targets")["data"]["activeTargets"]
        return {t["scrapeUrl"]: t["health"] == "up" for t in active}

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
