"""A KubeletConfig's ``tlsSecurityProfile`` as the kubelet's ``tlsMinVersion`` and
``tlsCipherSuites`` (upstream ``GetSecurityProfileCiphers``: openshift/api's ``TLSProfiles``,
library-go's ``OpenSSLToIANACipherSuites``, which drops the ciphers Go does not support)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_TLS13 = ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256")
_INTERMEDIATE = (*_TLS13, "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256",
                 "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384",
                 "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305")  # fmt: skip
_OLD = (*_INTERMEDIATE, "ECDHE-ECDSA-AES128-SHA256", "ECDHE-RSA-AES128-SHA256",
        "ECDHE-ECDSA-AES128-SHA", "ECDHE-RSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA384",
        "ECDHE-RSA-AES256-SHA384", "ECDHE-ECDSA-AES256-SHA", "ECDHE-RSA-AES256-SHA",
        "AES128-GCM-SHA256", "AES256-GCM-SHA384", "AES128-SHA256", "AES256-SHA256", "AES128-SHA",
        "AES256-SHA", "DES-CBC3-SHA")  # fmt: skip
PROFILES: dict[str, tuple[str, tuple[str, ...]]] = {
    "Old": ("VersionTLS10", _OLD),
    "Intermediate": ("VersionTLS12", _INTERMEDIATE),
    "Modern": ("VersionTLS13", _TLS13),
}
IANA = {
    **{c: c for c in _TLS13},
    "ECDHE-ECDSA-AES128-GCM-SHA256": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "ECDHE-RSA-AES128-GCM-SHA256": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "ECDHE-ECDSA-AES256-GCM-SHA384": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "ECDHE-RSA-AES256-GCM-SHA384": "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "ECDHE-ECDSA-CHACHA20-POLY1305": "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    "ECDHE-RSA-CHACHA20-POLY1305": "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    "ECDHE-ECDSA-AES128-SHA256": "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
    "ECDHE-RSA-AES128-SHA256": "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
    "AES128-GCM-SHA256": "TLS_RSA_WITH_AES_128_GCM_SHA256",
    "AES256-GCM-SHA384": "TLS_RSA_WITH_AES_256_GCM_SHA384",
    "AES128-SHA256": "TLS_RSA_WITH_AES_128_CBC_SHA256",
    "ECDHE-ECDSA-AES128-SHA": "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
    "ECDHE-RSA-AES128-SHA": "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    "ECDHE-ECDSA-AES256-SHA": "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
    "ECDHE-RSA-AES256-SHA": "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
    "AES128-SHA": "TLS_RSA_WITH_AES_128_CBC_SHA",
    "AES256-SHA": "TLS_RSA_WITH_AES_256_CBC_SHA",
    "DES-CBC3-SHA": "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
    "ECDHE-RSA-DES-CBC3-SHA": "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
}
"""OpenSSL names to the IANA names the kubelet takes; a name not here is dropped."""


def kubelet_tls(profile: Mapping[str, Any]) -> tuple[str, list[str]]:
    """(``tlsMinVersion``, ``tlsCipherSuites``) of a TLSSecurityProfile: its type's ciphers, a
    Custom profile's own, Intermediate's when a Custom one has no spec or the type is unknown."""
    kind = str(profile.get("type") or "")
    spec = PROFILES.get(kind)
    custom = profile.get("custom") if kind == "Custom" else None
    if isinstance(custom, Mapping):
        ciphers = tuple(str(c) for c in custom.get("ciphers") or [])
        spec = (str(custom.get("minTLSVersion") or ""), ciphers)
    if spec is None:
        spec = PROFILES["Intermediate"]
    return spec[0], [IANA[c] for c in spec[1] if c in IANA]
