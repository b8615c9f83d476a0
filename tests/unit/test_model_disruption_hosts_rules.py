"""containerd's registry hosts (model/disruption/hosts): where containerd looks for a
registry's ``hosts.toml``, how a file decodes (and each refusal), and upstream's no-drain
``registries.conf`` rules carried over to it, in upstream's log words."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcd.model.disruption import hosts as h
from mcd.model.disruption.hosts import HostEntry, HostsFile, HostsTomlError, unsafe_change

NS = "quay.io"
PATH = f"/etc/containerd/certs.d/{NS}/hosts.toml"


def toml(*mirrors: tuple[str, list[str] | None], **root: object) -> bytes:
    lines = []
    for key, value in root.items():
        shown = str(value).lower() if isinstance(value, bool) else f'"{value}"'
        lines.append(f"{key} = {shown}")
    lines.append("[host]" if not mirrors else "")
    for url, caps in mirrors:
        lines.append(f'[host."{url}"]')
        if caps is not None:
            lines.append("  capabilities = [" + ", ".join(f'"{c}"' for c in caps) + "]")
    return ("\n".join(lines) + "\n").encode()


DIGEST = ["pull"]
TAGS = ["pull", "resolve"]
M1, M2 = "https://m1.example.com", "https://m2.example.com"


# -- where containerd looks ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "dirs"),
    [
        ("quay.io", ("quay.io", "_default")),
        ("registry.local:5000", ("registry.local_5000_", "registry.local:5000", "_default")),
        ("[::1]:5000", ("[::1]_5000_", "[::1]:5000", "_default")),
    ],
)
def test_containerd_tries_host_port_then_host_then_default(
    host: str, dirs: tuple[str, ...]
) -> None:
    assert h.host_dirs(host) == dirs


hostnames = st.builds(str.__add__, st.sampled_from("abqxz"), st.text("abz09-.", max_size=14))
ports = st.integers(min_value=1, max_value=65535)


@given(hostnames, st.none() | ports)
def test_a_registrys_file_path_names_its_namespace_and_back(name: str, port: int | None) -> None:
    registry = f"{name}:{port}" if port else name
    path = h.hosts_path(registry)
    assert path.startswith("/etc/containerd/certs.d/") and path.endswith("/hosts.toml")
    namespace = h.namespace_of(path)
    assert namespace == h.host_dirs(registry)[0]  # the first directory containerd tries
    assert namespace is not None and h.registry_of(namespace) == registry


@pytest.mark.parametrize(
    "path",
    [
        "/etc/containerd/certs.d/quay.io/ca.crt",
        "/etc/containerd/certs.d/quay.io/sub/hosts.toml",
        "/etc/containerd/certs.d/hosts.toml",
        "/etc/containerd/config.toml",
        "/etc/docker/certs.d/quay.io/hosts.toml",
    ],
)
def test_only_a_namespaces_hosts_toml_is_judged(path: str) -> None:
    assert h.namespace_of(path) is None


# -- decoding --------------------------------------------------------------------------------


def test_a_file_decodes_as_containerd_reads_it() -> None:
    data = (
        b'server = "registry.example.com"\nca = "/etc/certs/root.pem"\n'
        b'[host."mirror.example.com:5000/v2/"]\n  capabilities = ["Pull"]\n  skip_verify = true\n'
        b'  client = [["/c.cert", "/c.key"], "/both.pem"]\n'
        b'  [host."mirror.example.com:5000/v2/".header]\n    x-token = ["a", "b"]\n'
    )
    parsed = h.parse_hosts_toml(data, PATH)
    assert parsed.server.url == "https://registry.example.com"
    assert parsed.server.ca == ("/etc/certs/root.pem",)
    [mirror] = parsed.hosts
    assert mirror.url == "https://mirror.example.com:5000"
    assert mirror.capabilities == frozenset({"pull"}) and not mirror.resolves
    assert mirror.skip_verify is True
    assert mirror.client == (("/c.cert", "/c.key"), ("/both.pem", ""))
    assert mirror.header == (("x-token", ("a", "b")),)


@pytest.mark.parametrize(
    ("data", "detail"),
    [
        (b'server = "x"\n', "invalid `host` tree: containerd 1.6 and 1.7 ignore a hosts.toml "
                            "without a [host] table; add one (an empty [host] will do)"),
        (b'[host."m"]\n  capabilities = ["pull", "fetch"]\n', "unknown capability fetch"),
        (b'[host."m"]\n  skip_verify = "yes"\n', 'host."m".skip_verify: must be a boolean'),
        (b'ca = 3\n[host]\n', "ca: must be a string or a list of strings"),
        (b'[host."m"]\n  client = [["a"]]\n', 'host."m".client: a pair must be two strings'),
        (b"[host\n", "Expected ']'"),
    ],
)  # fmt: skip
def test_a_file_containerd_would_ignore_is_refused(data: bytes, detail: str) -> None:
    with pytest.raises(HostsTomlError) as e:
        h.parse_hosts_toml(data, PATH)
    assert str(e.value).startswith(f"failed decoding TOML content from file {PATH}: ")
    assert detail in str(e.value)


urls = st.builds(
    lambda name, port: f"https://{name}" + (f":{port}" if port else ""),
    hostnames,
    st.none() | ports,
)
paths = st.lists(st.text("abcxyz/._-", min_size=1, max_size=12).map(lambda s: "/" + s), max_size=2)
entries = st.builds(
    HostEntry,
    url=urls,
    capabilities=st.sets(st.sampled_from(h.CAPABILITIES), min_size=1).map(frozenset),
    skip_verify=st.none() | st.booleans(),
    ca=paths.map(tuple),
    client=st.lists(st.tuples(st.text("ab/.", min_size=1, max_size=6),
                              st.sampled_from(["", "/k.key"])), max_size=2).map(tuple),
    header=st.dictionaries(st.sampled_from(["x-a", "x-b"]),
                           st.lists(st.text("ab \"\\é", max_size=5), min_size=1, max_size=2)
                           .map(tuple)).map(lambda d: tuple(sorted(d.items()))),
    override_path=st.booleans(),
)  # fmt: skip


@given(entries, st.lists(entries, max_size=4, unique_by=lambda e: e.url), st.booleans())
def test_a_rendered_file_decodes_to_what_was_rendered(
    root: HostEntry, mirrors: list[HostEntry], server: bool
) -> None:
    root = HostEntry(
        url=root.url if server else "",
        capabilities=root.capabilities,
        skip_verify=root.skip_verify,
        ca=root.ca,
        client=root.client,
        header=root.header,
    )  # fmt: skip  (the root has no override_path of its own here)
    wanted = HostsFile(root, tuple(mirrors))
    assert h.parse_hosts_toml(h.render_hosts_toml(wanted), PATH) == wanted


# -- the no-drain rules ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (None, toml((M1, DIGEST))),  # a digest-only mirror for a new registry
        (toml((M1, DIGEST)), toml((M1, DIGEST), (M2, DIGEST))),  # another digest-only mirror
        (toml((M1, TAGS)), toml((M1, DIGEST))),  # narrowed to digest-only
        (None, toml(ca="/etc/certs/root.pem")),  # a CA only: trust, as upstream's CAs
        (toml(ca="/etc/certs/root.pem"), None),
        (toml((M1, TAGS), ca="/a.pem"), toml((M1, TAGS), ca="/b.pem")),
        (toml((M1, DIGEST), (M2, DIGEST)), toml((M2, DIGEST), (M1, DIGEST))),  # digest-only order
        (toml((M1, TAGS)), toml((M2, ["push"]), (M1, TAGS))),  # a push-only host
        (toml(server=f"https://{NS}"), toml()),  # the default server spelled out, or not
    ],
)  # fmt: skip
def test_changes_that_need_no_drain(old: bytes | None, new: bytes | None) -> None:
    assert unsafe_change(NS, old, new) == ""


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        (None, toml((M1, TAGS)),
         f"mirror {M1} has been added in registry {NS} that can resolve tags "
         "(capabilities without resolve make it digest-only)"),
        (None, toml((M1, None)), f"mirror {M1} has been added in registry {NS} that can resolve"),
        (toml((M1, DIGEST)), None, f"mirror {M1} has been removed in registry {NS}"),
        (toml((M1, DIGEST), (M2, DIGEST)), toml((M2, DIGEST)),
         f"mirror {M1} has been removed in registry {NS}"),
        (toml((M1, DIGEST)), toml((M1, TAGS)), f"mirror {M1} in registry {NS} may now resolve tags"),
        (toml(), toml(server="https://other.example.com"),
         f"server for registry {NS} has changed from https://{NS} to https://other.example.com"),
        (toml(), toml(skip_verify=True),
         f"skip_verify value for registry {NS} has changed from false to true"),
        (toml((M1, TAGS), (M2, TAGS)), toml((M2, TAGS), (M1, TAGS)),
         f"mirrors that resolve tags have been reordered in registry {NS} "
         f"(from {M1}, {M2} to {M2}, {M1})"),
    ],
)  # fmt: skip
def test_changes_that_need_a_drain_say_why(old: bytes | None, new: bytes | None, why: str) -> None:
    assert unsafe_change(NS, old, new).startswith(f"{PATH}: {why}")


def test_docker_hubs_default_server_is_registry_1() -> None:
    assert unsafe_change("docker.io", None, toml(server="https://registry-1.docker.io")) == ""
    assert h.registry_of("registry.local_5000_") == "registry.local:5000"


@given(st.lists(entries, max_size=3, unique_by=lambda e: e.url), st.data())
def test_adding_only_digest_only_mirrors_never_drains(
    mirrors: list[HostEntry], data: st.DataObject
) -> None:
    before = HostsFile(HostEntry(), tuple(mirrors))
    extra = data.draw(st.lists(entries, max_size=3, unique_by=lambda e: e.url))
    added = [HostEntry(url=e.url, capabilities=frozenset({"pull"}), ca=e.ca) for e in extra
             if e.url not in {m.url for m in mirrors}]  # fmt: skip
    after = HostsFile(HostEntry(), (*mirrors, *added))
    assert unsafe_change(NS, h.render_hosts_toml(before), h.render_hosts_toml(after)) == ""
    # and removing any mirror always does
    if mirrors:
        fewer = HostsFile(HostEntry(), tuple(mirrors[1:]))
        assert "has been removed" in unsafe_change(
            NS, h.render_hosts_toml(before), h.render_hosts_toml(fewer)
        )
