"""What the deployment tests read: the Kubernetes manifests, docker/compose.yaml and the nginx
configuration, parsed, and the Kubernetes version their schemas are checked against."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
KUBERNETES_DIR = ROOT / "deploy" / "kubernetes"
COMPOSE_FILE = ROOT / "docker" / "compose.yaml"
NGINX_CONF = ROOT / "docker" / "nginx.conf"
# The oldest Kubernetes release still in common use whose schemas kubernetes-validate bundles:
# a manifest valid there is valid on every later one that serves the same API versions.
KUBERNETES_VERSION = "1.30"
GATE_NAME = "handler-kit"
# A value that could be a real credential: long, random-looking, no placeholder marker.
PLACEHOLDER = "REPLACE-ME"


def documents(path: Path) -> list[dict[str, Any]]:
    """The YAML documents of ``path`` (empty documents left out)."""
    with path.open(encoding="utf-8") as f:
        return [doc for doc in yaml.safe_load_all(f) if doc]


def manifests() -> list[tuple[str, dict[str, Any]]]:
    """Every Kubernetes object of deploy/kubernetes (not the Kustomization), with its file."""
    out = []
    for path in sorted(KUBERNETES_DIR.glob("*.yaml")):
        for doc in documents(path):
            if doc.get("kind") != "Kustomization":
                out.append((path.name, doc))
    return out


def find(kind: str, name: str) -> dict[str, Any]:
    matches = [
        doc for _, doc in manifests() if doc["kind"] == kind and doc["metadata"]["name"] == name
    ]
    assert len(matches) == 1, f"{kind}/{name}: {len(matches)} objects"
    return matches[0]


def gate_container(deployment: dict[str, Any]) -> dict[str, Any]:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1, [c["name"] for c in containers]
    container: dict[str, Any] = containers[0]
    return container


def upstream_servers(conf: str) -> list[str]:
    """The ``server`` lines of nginx.conf's upstream block, as HOST:PORT."""
    block = re.search(r"upstream\s+\w+\s*\{(.*?)\}", conf, re.S)
    assert block is not None, "no upstream block in nginx.conf"
    return re.findall(r"^\s*server\s+(\S+?)[\s;]", block.group(1), re.M)
