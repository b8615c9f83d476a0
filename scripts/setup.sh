#!/usr/bin/env bash
# Install everything mcd needs on a fresh Debian machine: the apt packages it
# uses, then a virtualenv (.venv) with mcd and its Python dependencies.
# Safe to run again: it only installs what is missing.
# Progress: one line per step on stderr (`setup: ...`), with the seconds since the start.
set -euo pipefail
cd "$(dirname "$0")/.."

started=$SECONDS
step() { printf 'setup: [%3ds] %s\n' "$((SECONDS - started))" "$*" >&2; }

step "checking the Debian packages mcd and its tests use"

apt_packages=()
command -v make >/dev/null 2>&1 || apt_packages+=(make)
command -v python3 >/dev/null 2>&1 || apt_packages+=(python3)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || apt_packages+=(python3-venv)
# dbus: the private test bus (dbus-daemon). libsystemd-dev, pkg-config, gcc and the
# Python headers: systemd-python (journald, sd_notify) builds from source.
# passwd: usermod --prefix for the password hash. systemd: systemctl --root for
# offline unit enablement.
for pkg in dbus libsystemd-dev pkg-config gcc passwd systemd; do
    dpkg -s "$pkg" >/dev/null 2>&1 || apt_packages+=("$pkg")
done
# kubectl for the tests that drive the fake API server with the real client
# (Debian's kubernetes-client: kubectl 1.20).
command -v kubectl >/dev/null 2>&1 || apt_packages+=(kubernetes-client)
python3 - >/dev/null 2>&1 <<'PY' || apt_packages+=(python3-dev)
import os, sysconfig
raise SystemExit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))
PY
# The real parts the suite runs when root (tests/realparts): systemd as PID 1 of an nspawn
# container (systemd-container, debootstrap for its cached rootfs), OSTree deployments in a temp
# sysroot (ostree), the Containerfile built and run (podman, buildah, runc), CoreOS Ignition
# fetching from mcd server (ignition; policycoreutils for its setfiles), Prometheus and promtool
# checking the alerting rules and scraping the e2e agents (prometheus). Installed
# without recommends: libnss-mymachines would edit /etc/nsswitch.conf.
real_parts=()
if [ "$(id -u)" -eq 0 ] && [ -z "${MCD_NO_REAL_PARTS:-}" ]; then
    for pkg in systemd-container debootstrap ostree podman buildah runc ignition policycoreutils \
        prometheus; do
        dpkg -s "$pkg" >/dev/null 2>&1 || real_parts+=("$pkg")
    done
fi
# Ignition's own verdict on every test config (ignition-validate, from the package ignition;
# tests/integration/test_ignition_agreement.py) needs no root: installed for every run.
if [ -z "${MCD_NO_REAL_PARTS:-}" ] && ! command -v ignition-validate >/dev/null 2>&1 \
    && [[ " ${real_parts[*]-} " != *" ignition "* ]]; then
    real_parts+=(ignition)
fi
if ((${#apt_packages[@]} + ${#real_parts[@]})); then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    apt=($sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600)
    step "apt-get update"
    "${apt[@]}" update -qq
    if ((${#apt_packages[@]})); then
        step "installing ${apt_packages[*]}"
        "${apt[@]}" install -y -qq "${apt_packages[@]}"
    fi
    if ((${#real_parts[@]})); then
        step "installing the real parts the tests run: ${real_parts[*]}"
        "${apt[@]}" install -y -qq --no-install-recommends "${real_parts[@]}"
    fi
else
    step "every Debian package is already installed"
fi

python3 - <<'PY'
import sys
if sys.version_info < (3, 11):
    sys.exit(f"mcd needs Python 3.11 or newer, found {sys.version.split()[0]}")
PY

if [ -x .venv/bin/python ]; then
    step "virtualenv .venv exists"
else
    step "creating the virtualenv .venv"
    python3 -m venv .venv
fi
step "installing mcd and its Python dependencies into .venv (pip; the longest step)"
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]' 2>&1 \
    | grep -v '^WARNING: Location' || true
.venv/bin/mcd --version >/dev/null
step "done: $(.venv/bin/mcd --version)"
