"""The machine-config-server's commands: ``server``, ``join-token create``, ``join``."""

from __future__ import annotations

import base64
import json
import os
import sys
import urllib.parse
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click

from mcd.cli.common import EXIT_USAGE, connect, fail, output_options, writing_root
from mcd.cli.jointokens import join_token_list, join_token_revoke, token_options
from mcd.model.errors import ConfigError
from mcd.model.node.health import parse_duration

POINTER_VERSION = "3.2.0"
"""The pointer config's spec: the oldest that has ``httpHeaders`` and that every Ignition
still in use reads (the node's Ignition then asks the server for its own newest spec)."""


@click.command("server")
@click.option("--kubeconfig", type=click.Path(dir_okay=False), help="Default: in-cluster config.")
@click.option(
    "--secure-port",
    type=click.IntRange(0, 65535),
    default=22623,
    show_default=True,
    help="HTTPS (--cert, --key); 0: off.",
)
@click.option(
    "--insecure-port",
    type=click.IntRange(0, 65535),
    default=22624,
    show_default=True,
    help="Plain HTTP, as upstream; 0: off.",
)
@click.option("--bind-address", default="0.0.0.0", show_default=True, help="Listen address.")
@click.option("--cert", type=click.Path(dir_okay=False), help="TLS certificate (secure port).")
@click.option("--key", type=click.Path(dir_okay=False), help="TLS key (secure port).")
@click.option(
    "--require-join-token",
    is_flag=True,
    help="Serve /config/<pool> only to a request with a valid, unused join token for it.",
)
@click.option(
    "--namespace",
    envvar="POD_NAMESPACE",
    default="mcd",
    show_default=True,
    help="The server's namespace (its kube-root-ca.crt; default: $POD_NAMESPACE).",
)
@click.option(
    "--token-namespace", envvar="MCD_JOIN_TOKEN_NAMESPACE", default="mcd-join-tokens",
    show_default=True, help="Where the join-token Secrets are (a namespace holding nothing else).",
)  # fmt: skip
@click.option("--apiserver-url", default="", help="The API server a served kubeconfig names.")
@click.option(
    "--bootstrap-token-dir",
    type=click.Path(file_okay=False),
    default="",
    help="Directory with `token` and `ca.crt` for the served kubeconfig (none without it).",
)
@output_options
def server_command(
    kubeconfig: str | None,
    secure_port: int,
    insecure_port: int,
    bind_address: str,
    cert: str | None,
    key: str | None,
    require_join_token: bool,
    namespace: str,
    token_namespace: str,
    apiserver_url: str,
    bootstrap_token_dir: str,
) -> None:
    """Serve each pool's rendered config to booting nodes as Ignition (/config/<pool>)."""
    from mcd.cluster.api import ConfigurationError  # noqa: PLC0415
    from mcd.host.systemd.journal import configure_logging  # noqa: PLC0415
    from mcd.server.run import Settings, run  # noqa: PLC0415

    configure_logging()
    if secure_port and not (cert and key):
        fail("the secure port needs --cert and --key (or --secure-port 0)")
    if not secure_port and not insecure_port:
        fail("both ports are off")
    settings = Settings(
        kubeconfig=kubeconfig,
        namespace=namespace,
        token_namespace=token_namespace,
        bind_address=bind_address,
        secure_port=secure_port,
        insecure_port=insecure_port,
        cert=cert or "",
        key=key or "",
        require_join_token=require_join_token,
        apiserver_url=apiserver_url,
        bootstrap_token_dir=bootstrap_token_dir,
    )
    try:
        sys.exit(run(settings))
    except (OSError, ValueError, ConfigurationError) as e:
        fail(f"cannot start: {e}")


@click.group("join-token")
def join_token_group() -> None:
    """Issue tokens new nodes fetch their pool's config with (one node, or up to N nodes of a
    pool); list and revoke them."""


join_token_group.add_command(join_token_list)
join_token_group.add_command(join_token_revoke)


def _ttl(ctx: click.Context, param: click.Parameter, value: str) -> timedelta:
    try:
        return timedelta(seconds=parse_duration(value))
    except ConfigError as e:
        raise click.BadParameter(str(e)) from e


def pointer_config(server: str, pool: str, token: str, ca: bytes) -> dict[str, object]:
    """The Ignition config a new machine's user data holds: fetch the pool's config from
    the server, trusting ``ca``, with the token in the request's headers."""
    from mcd.server.tokens import HEADER, SCHEME  # noqa: PLC0415

    ignition: dict[str, object] = {
        "version": POINTER_VERSION,
        "config": {
            "replace": {
                "source": f"{server.rstrip('/')}/config/{pool}",
                "httpHeaders": [{"name": HEADER, "value": f"{SCHEME} {token}"}],
            }
        },
    }
    if ca:
        source = "data:;base64," + base64.b64encode(ca).decode()
        ignition["security"] = {"tls": {"certificateAuthorities": [{"source": source}]}}
    return {"ignition": ignition}


def _https_problem(server: str) -> str | None:
    url = urllib.parse.urlsplit(server)
    if url.scheme != "https" or not url.hostname:
        return (
            f"--server {server}: not an https:// URL (the pointer config would send the token,"
            " and the server the node's pull secret, in clear)"
        )
    return None


@join_token_group.command("create")
@click.argument("node", required=False, default="")
@click.option("--pool", required=True, help="The pool the node (or nodes) join.")
@click.option(
    "--uses", type=click.IntRange(1, 500),
    help="A pool-scoped token, no NODE: up to this many nodes may join with it.",
)  # fmt: skip
@click.option("--ttl", default="1h", show_default=True, callback=_ttl, help="At most 7 days.")
@click.option("--server", "server_url", help="The server's URL (https://HOST:22623).")
@click.option(
    "--ca",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="The CA of the server's certificate, put in the pointer config.",
)
@token_options
@click.option("--token-only", is_flag=True, help="Print the token alone, not a pointer config.")
def join_token_create(
    node: str,
    pool: str,
    uses: int | None,
    ttl: timedelta,
    server_url: str | None,
    ca: Path | None,
    kubeconfig: str | None,
    namespace: str,
    token_only: bool,
) -> None:
    """Issue a token for NODE to fetch POOL's config once, or (--uses N, no NODE) for up to
    N nodes of POOL, as an autoscaling group's shared launch template needs; print the
    pointer Ignition config."""
    from mcd.cli.output import exact_duration  # noqa: PLC0415
    from mcd.cluster.api import ApiError, ConfigurationError, Kube  # noqa: PLC0415
    from mcd.cluster.pools import POOLS  # noqa: PLC0415
    from mcd.server.tokens import issue, pool_name_problem  # noqa: PLC0415
    from mcd.server.tokenstore import TokenStore  # noqa: PLC0415

    if bool(node) == bool(uses):
        raise click.UsageError("give NODE (one node, one use) or --uses N (a pool's nodes)")
    if not token_only and not server_url:
        raise click.UsageError("--server is needed for the pointer config (or --token-only)")
    problem = (_https_problem(server_url) if server_url else None) or pool_name_problem(pool)
    if problem:
        fail(problem if problem.startswith("--server") else f"--pool {problem}", EXIT_USAGE)
    try:
        issued = issue(node, pool, ttl, datetime.now(UTC), uses or 1)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--ttl") from e
    try:
        ca_data = ca.read_bytes() if ca else b""
        kube = Kube(connect(kubeconfig))
        try:
            kube.request("GET", f"{POOLS}/{pool}")
        except ApiError as e:
            if e.status != 404:
                raise
            fail(f"--pool {pool}: no such MachineConfigPool (kubectl get mcp lists them)")
        TokenStore(kube, namespace).create(issued)
    except (ApiError, ConfigurationError, OSError) as e:
        fail(f"cannot create the join token: {e}")
    valid = exact_duration(ttl.total_seconds())  # 1h, 1h30m: as --ttl takes it (mcd.cli.output)
    whom = f"node {node}" if node else f"up to {uses} node{'s' if uses != 1 else ''}"
    click.echo(f"join token {issued.token_id} for {whom}, pool {pool}, valid {valid}", err=True)
    if token_only:
        click.echo(issued.token)
        return
    assert server_url is not None
    click.echo(json.dumps(pointer_config(server_url, pool, issued.token, ca_data), indent=2))


@click.command("join")
@click.option(
    "--server",
    "server_url",
    required=True,
    help="https://HOST:22623 (with --pool), or https://HOST:22623/config/POOL.",
)
@click.option("--pool", help="The pool to join (unless --server names it).")
@click.option("--token", envvar="MCD_JOIN_TOKEN", help="The join token (or $MCD_JOIN_TOKEN).")
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A file holding the join token; removed once the node joined (the first-boot unit's).",
)
@click.option(
    "--ca",
    required=True,
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="The CA of the server's certificate (the only one trusted).",
)
@writing_root  # refused before anything is fetched on a host that is no node, as once-from
@click.option("--skip-reboot", is_flag=True, help="Apply everything but do not reboot.")
@click.option(
    "--timeout", "fetch_timeout", default="5m", show_default=True, callback=_ttl,
    help="The deadline for the whole fetch (connect, TLS, answer), however slow the server.",
)  # fmt: skip
@output_options
def join_command(
    server_url: str,
    pool: str | None,
    token: str | None,
    token_file: Path | None,
    ca: Path,
    root: Path,
    skip_reboot: bool,
    fetch_timeout: timedelta,
) -> None:
    """Fetch the pool's config as a booting node would and apply it once (for a host
    without Ignition), through the same gate as once-from; then write the node-annotations
    file, so the agent starts on that config, Done.

    Exit 0 when joined (or the reboot is queued or skipped), 2 when the config cannot be
    applied to this host, 1 on any other failure (everything rolled back, nothing written).
    """
    from mcd.cli.common import console_logging, say  # noqa: PLC0415
    from mcd.server.client import FetchError, config_url, fetch  # noqa: PLC0415

    console_logging()
    if bool(token) == bool(token_file):
        raise click.UsageError("give --token (or $MCD_JOIN_TOKEN) or --token-file, one of them")
    try:
        secret = token or (token_file.read_text().strip() if token_file else "")
        url, host, port, path = config_url(server_url, pool)
        doc = fetch(url, host, port, path, secret, ca.read_bytes(), fetch_timeout.total_seconds())
    except FetchError as e:
        fail(f"cannot fetch the config: {e}")
    except OSError as e:
        fail(f"cannot read {e.filename}: {e.strerror}")
    outcome = _apply_joined(doc, root, skip_reboot)
    if token_file is not None:
        token_file.unlink(missing_ok=True)  # used up: the first-boot unit runs no more
    say(outcome)


def _apply_joined(doc: object, root: Path, skip_reboot: bool) -> str:
    import tempfile  # noqa: PLC0415

    from mcd.agent.commands.once import node_for, run_once  # noqa: PLC0415
    from mcd.agent.update.transaction import Outcome, UpdateError  # noqa: PLC0415
    from mcd.cli.common import EXIT_MISMATCH  # noqa: PLC0415
    from mcd.host.errors import HostError  # noqa: PLC0415
    from mcd.host.fs import fsops  # noqa: PLC0415
    from mcd.host.rootfs import Root  # noqa: PLC0415
    from mcd.model.ignition.served import unpack  # noqa: PLC0415
    from mcd.model.text import printable  # noqa: PLC0415

    try:
        if not isinstance(doc, dict):
            raise ConfigError("the served config is not a JSON object")
        unpacked = unpack(doc)
        name = str((unpacked.machine_config.get("metadata") or {}).get("name") or "")
        if not name or "/" in name or name.startswith("."):
            raise ConfigError("the served MachineConfig has no usable name")
    except ConfigError as e:
        fail(f"the served config: {e}")
    node_root = Root(root)
    node = node_for(node_root)
    try:
        with tempfile.TemporaryDirectory(prefix="mcd-join-") as tmp:
            source = Path(tmp) / f"{name}.json"
            fd = os.open(source, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump(unpacked.machine_config, f)
            result = run_once(str(source), node, skip_reboot=True)
        if result.outcome not in (Outcome.DONE, Outcome.REBOOT_PENDING) or (
            result.outcome is Outcome.DONE and not result.applied
        ):
            fail(f"not joined: {printable(name)}: {result.outcome}")
        for node_path, data, mode in unpacked.extras:
            fsops.write_file(node_root, node_path, data, mode)
        if result.outcome is Outcome.REBOOT_PENDING and not skip_reboot:
            node.effects.systemd.reboot(f"mcd join: {name}")
            return f"joined: {printable(name)} applied to {root}; rebooting"
    except UpdateError as e:
        unreconcilable = str(e).startswith("can't reconcile")
        fail(str(e), EXIT_MISMATCH if unreconcilable else 1)
    except ConfigError as e:
        fail(f"the served config: {e}")
    except (HostError, OSError) as e:
        fail(str(e))
    finally:
        node.effects.systemd.close()
    pending = "; a reboot completes it" if result.outcome is Outcome.REBOOT_PENDING else ""
    return f"joined: {printable(name)} applied to {root}{pending}"
