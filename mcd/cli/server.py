"""The machine-config-server's commands: ``server``, ``join-token create``, ``join``."""

from __future__ import annotations

import base64
import json
import sys
from datetime import timedelta
from pathlib import Path

import click

from mcd.cli.common import fail, output_options
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
    help="Where the join-token Secrets are (default: $POD_NAMESPACE).",
)
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
    """Issue one-use tokens a new node fetches its pool's config with."""


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


@join_token_group.command("create")
@click.argument("node")
@click.option("--pool", required=True, help="The pool the node joins.")
@click.option("--ttl", default="1h", show_default=True, callback=_ttl, help="At most 7 days.")
@click.option("--server", "server_url", help="The server's URL (https://HOST:22623).")
@click.option(
    "--ca",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="The CA of the server's certificate, put in the pointer config.",
)
@click.option("--kubeconfig", type=click.Path(dir_okay=False), help="Default: $KUBECONFIG.")
@click.option(
    "--namespace", envvar="POD_NAMESPACE", default="mcd", show_default=True,
    help="The server's namespace (its token Secrets).",
)  # fmt: skip
@click.option("--token-only", is_flag=True, help="Print the token alone, not a pointer config.")
def join_token_create(
    node: str,
    pool: str,
    ttl: timedelta,
    server_url: str | None,
    ca: Path | None,
    kubeconfig: str | None,
    namespace: str,
    token_only: bool,
) -> None:
    """Issue a token for NODE to fetch POOL's config once; print the pointer Ignition config."""
    from datetime import UTC, datetime  # noqa: PLC0415

    from mcd.cluster.api import ApiError, ConfigurationError, Kube, load_client  # noqa: PLC0415
    from mcd.server.tokens import TokenStore, issue  # noqa: PLC0415

    if not token_only and not server_url:
        raise click.UsageError("--server is needed for the pointer config (or --token-only)")
    try:
        issued = issue(node, pool, ttl, datetime.now(UTC))
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--ttl") from e
    try:
        ca_data = ca.read_bytes() if ca else b""
        TokenStore(Kube(load_client(kubeconfig)), namespace).create(issued)
    except (ApiError, ConfigurationError, OSError) as e:
        fail(f"cannot create the join token: {e}")
    click.echo(f"join token {issued.token_id} for node {node}, pool {pool}, valid {ttl}", err=True)
    if token_only:
        click.echo(issued.token)
        return
    assert server_url is not None
    click.echo(json.dumps(pointer_config(server_url, pool, issued.token, ca_data), indent=2))
