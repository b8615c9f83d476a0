"""``python -m tests.e2e.in_cluster SERVICE_ACCOUNT_DIR start ...``: ``mcd`` as the DaemonSet
runs it, with no kubeconfig: the service account's token and CA (from this directory instead
of ``/var/run/secrets/kubernetes.io/serviceaccount``) and the API server named by the host's
kubelet kubeconfig under ``--root-mount``. Nothing else differs from ``python -m mcd``."""

from __future__ import annotations

import sys

from mcd.cli import main
from mcd.cluster import api

if __name__ == "__main__":
    defaults = api.load_client.__kwdefaults__
    assert defaults is not None and "service_account" in defaults
    defaults["service_account"] = sys.argv.pop(1)
    main()
