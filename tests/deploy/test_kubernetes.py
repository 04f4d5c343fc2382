"""deploy/kubernetes: every object valid against the Kubernetes schemas (kubernetes-validate,
offline, strict: a misspelt field fails), listed in the Kustomization, and wired together: the
probes on the routes the server serves, a preStop delay inside the grace period, resources set,
tokens from the Secret as a mounted file, selectors that match the gate pods. Hardened: every
image by a release tag, every pod non-root with a read-only root and no capabilities, Redis
and Postgres reachable from the gates alone, Redis behind a password from the Secret."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

import kubernetes_validate
import pytest

from handler_kit._version import __version__
from handler_kit.config import SETTINGS
from tests.deploy.support import (
    GATE_NAME,
    KUBERNETES_DIR,
    KUBERNETES_VERSION,
    PLACEHOLDER,
    documents,
    find,
    gate_container,
    manifests,
)

SETTING_NAMES = {setting.env for setting in SETTINGS}
KINDS = {
    "ConfigMap",
    "Deployment",
    "HorizontalPodAutoscaler",
    "NetworkPolicy",
    "PodDisruptionBudget",
    "Secret",
    "Service",
}


@pytest.mark.parametrize(
    ("file", "doc"),
    manifests(),
    ids=[f"{file}:{doc['kind']}/{doc['metadata']['name']}" for file, doc in manifests()],
)
def test_every_object_is_valid_against_the_kubernetes_schema(file: str, doc: dict) -> None:
    kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_the_schema_check_refuses_a_misspelt_field(deployment: dict[str, Any]) -> None:
    """Strict validation is what catches a typo a cluster would silently drop."""
    broken = {**deployment, "spec": {**deployment["spec"], "replica": 3}}
    with pytest.raises(kubernetes_validate.ValidationError, match="replica"):
        kubernetes_validate.validate(broken, KUBERNETES_VERSION, strict=True)


def test_the_kustomization_lists_every_manifest_and_each_kind_is_there() -> None:
    (kustomization,) = documents(KUBERNETES_DIR / "kustomization.yaml")
    files = {p.name for p in KUBERNETES_DIR.glob("*.yaml")} - {"kustomization.yaml"}
    assert sorted(kustomization["resources"]) == sorted(files)
    assert {doc["kind"] for _, doc in manifests()} >= KINDS


def test_probes_on_the_health_and_readiness_routes(deployment: dict[str, Any]) -> None:
    container = gate_container(deployment)
    port = container["ports"][0]
    assert port["containerPort"] == 8000 and port["name"] == "http"
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}


def test_draining_replicas_finish_their_answers(deployment: dict[str, Any]) -> None:
    """The preStop sleep keeps the pod serving while it leaves the Service's endpoints; the
    server's own grace period for answers in flight follows; both fit the pod's grace period."""
    container = gate_container(deployment)
    command = container["lifecycle"]["preStop"]["exec"]["command"]
    assert command[0] == "sleep", command
    pre_stop = float(command[1])
    assert pre_stop >= 3
    config = find("ConfigMap", GATE_NAME)["data"]
    graceful = float(config["HANDLER_KIT_GRACEFUL_TIMEOUT"])
    grace_period = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert pre_stop + graceful < grace_period
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0


def test_every_container_has_resource_requests_and_limits() -> None:
    for file, doc in manifests():
        if doc["kind"] != "Deployment":
            continue
        for container in doc["spec"]["template"]["spec"]["containers"]:
            resources = container.get("resources", {})
            for part in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(resources.get(part, {})), (file, part)


def test_tokens_come_from_the_secret_as_a_mounted_file(deployment: dict[str, Any]) -> None:
    container = gate_container(deployment)
    env = {item["name"]: item for item in container.get("env", [])}
    assert "HANDLER_KIT_TOKENS" not in env, "tokens in a plain environment variable"
    tokens_file = env["HANDLER_KIT_TOKENS_FILE"]["value"]
    audit_file = env["HANDLER_KIT_AUDIT_FILE"]["value"]
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    secret = find("Secret", GATE_NAME)
    for path in (tokens_file, audit_file):
        folder, key = path.rsplit("/", 1)
        mounts = [m for m in container["volumeMounts"] if m["mountPath"] == folder]
        assert len(mounts) == 1, path
        assert mounts[0].get("readOnly") is True
        volume = volumes[mounts[0]["name"]]
        assert volume["secret"]["secretName"] == GATE_NAME
        assert key in secret["stringData"], key


def test_no_credential_outside_the_secret_and_the_secret_holds_placeholders() -> None:
    secret = find("Secret", GATE_NAME)
    assert "data" not in secret
    for key, value in secret["stringData"].items():
        assert PLACEHOLDER in value, f"{key} holds something other than a placeholder"
    for file, doc in manifests():
        if doc["kind"] == "Secret":
            continue
        text = (KUBERNETES_DIR / file).read_text(encoding="utf-8")
        assert PLACEHOLDER not in text and "postgresql://" not in text, file
        for container in (
            doc.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])
        ):
            for item in container.get("env", []):
                assert not item["name"].endswith(("TOKENS", "PASSWORD", "SECRET")), item


def test_every_handler_kit_variable_is_a_setting(deployment: dict[str, Any]) -> None:
    """A misspelt variable is ignored by the server: here it fails instead."""
    names = set(find("ConfigMap", GATE_NAME)["data"])
    names |= {item["name"] for item in gate_container(deployment).get("env", [])}
    unknown = sorted(n for n in names if n.startswith("HANDLER_KIT_") and n not in SETTING_NAMES)
    assert not unknown, unknown


def test_the_other_objects_select_the_gate_pods(deployment: dict[str, Any]) -> None:
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    service = find("Service", GATE_NAME)
    assert service["spec"]["selector"].items() <= labels.items()
    assert service["spec"]["ports"][0]["targetPort"] == "http"
    pdb = find("PodDisruptionBudget", GATE_NAME)
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    policy = find("NetworkPolicy", GATE_NAME)
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    assert {"Ingress", "Egress"} == set(policy["spec"]["policyTypes"])
    assert [p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]] == [8000]
    hpa = find("HorizontalPodAutoscaler", GATE_NAME)
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", GATE_NAME)
    # the autoscaler never goes below what the disruption budget keeps serving
    assert hpa["spec"]["minReplicas"] >= deployment["spec"]["replicas"] >= 2
    assert hpa["spec"]["minReplicas"] > pdb["spec"]["maxUnavailable"]


def deployments() -> list[dict[str, Any]]:
    return [doc for _, doc in manifests() if doc["kind"] == "Deployment"]


def containers_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    spec = doc["spec"]["template"]["spec"]
    return [*spec.get("initContainers", []), *spec["containers"]]


# a release: 7.4.1, 16.4, 7.4.1-alpine, 16.4-bookworm (never latest, nor a major alone)
RELEASE_TAG = re.compile(r"\d+\.\d+(\.\d+)*(-[a-z0-9.]+)?")


def test_every_image_is_pinned_to_a_release() -> None:
    """A floating tag (latest, 7, 16) is another image on each pull: replicas of one
    Deployment would run different code, and a restart picks up what nobody reviewed."""
    for doc in deployments():
        for container in containers_of(doc):
            image = container["image"]
            if "@sha256:" in image:
                continue
            name, _, tag = image.rpartition(":")
            assert name and "/" not in tag, f"{image}: no tag"
            assert RELEASE_TAG.fullmatch(tag), f"{image}: not a release tag"
    # the gate image: the release of this package, the code these manifests were written for
    assert gate_container(find("Deployment", GATE_NAME))["image"] == f"handler-kit:{__version__}"


@pytest.mark.parametrize("name", [GATE_NAME, "redis", "postgres"])
def test_every_pod_runs_unprivileged(name: str) -> None:
    doc = find("Deployment", name)
    pod = doc["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    context = pod["securityContext"]
    assert context["runAsNonRoot"] is True
    assert context["runAsUser"] > 0
    assert context["seccompProfile"] == {"type": "RuntimeDefault"}
    for container in containers_of(doc):
        own = container["securityContext"]
        assert own["allowPrivilegeEscalation"] is False, container["name"]
        assert own["readOnlyRootFilesystem"] is True, container["name"]
        assert own["capabilities"] == {"drop": ["ALL"]}, container["name"]
        assert "privileged" not in own and "add" not in own["capabilities"]


@pytest.mark.parametrize(("name", "port"), [("redis", 6379), ("postgres", 5432)])
def test_redis_and_postgres_take_connections_from_the_gates_alone(name: str, port: int) -> None:
    deployment = find("Deployment", name)
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    gate_labels = find("Deployment", GATE_NAME)["spec"]["template"]["metadata"]["labels"]
    policy = find("NetworkPolicy", name)
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    assert set(policy["spec"]["policyTypes"]) == {"Ingress", "Egress"}
    assert not policy["spec"].get("egress"), "no connection out"
    (rule,) = policy["spec"]["ingress"]
    (source,) = rule["from"]
    assert set(source) == {"podSelector"}, "pods of this namespace only"
    selector = source["podSelector"]["matchLabels"]
    assert selector.items() <= gate_labels.items()
    # the selector picks the gate pods and nothing else: every label of another pod differs
    for other in deployments():
        if other["metadata"]["name"] != GATE_NAME:
            other_labels = other["spec"]["template"]["metadata"]["labels"]
            assert not selector.items() <= other_labels.items(), other["metadata"]["name"]
    assert rule["ports"] == [{"port": port, "protocol": "TCP"}]
    service = find("Service", name)
    assert [p["port"] for p in service["spec"]["ports"]] == [port]


def secret_file_key(container: dict[str, Any], pod: dict[str, Any], path: str) -> str:
    """The key of the Secret ``handler-kit`` that ``path`` is, in ``container``."""
    folder, key = path.rsplit("/", 1)
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == folder]
    assert mount.get("readOnly") is True, path
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert volume["secret"]["secretName"] == GATE_NAME, path
    items = {item["path"]: item["key"] for item in volume["secret"].get("items", [])}
    return items.get(key, key) if items else key


def test_redis_requires_the_password_of_the_secret_and_the_gates_send_it() -> None:
    secret = find("Secret", GATE_NAME)["stringData"]
    redis = find("Deployment", "redis")
    pod = redis["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    script = " ".join(container["command"] + container.get("args", []))
    match = re.search(r"requirepass \$\(cat (\S+)\)", script)
    assert match, script
    assert secret_file_key(container, pod, match.group(1)) == "redis-password"
    # the gates: the URL from the Secret, as a file, with that password; none in the ConfigMap
    assert "HANDLER_KIT_IDEMPOTENCY_REDIS_URL" not in find("ConfigMap", GATE_NAME)["data"]
    gates = find("Deployment", GATE_NAME)
    gate = gate_container(gates)
    env = {item["name"]: item for item in gate["env"]}
    assert "HANDLER_KIT_IDEMPOTENCY_REDIS_URL" not in env
    path = env["HANDLER_KIT_IDEMPOTENCY_REDIS_URL_FILE"]["value"]
    key = secret_file_key(gate, gates["spec"]["template"]["spec"], path)
    url = urlsplit(secret[key])
    assert (url.scheme, url.hostname, url.port) == ("redis", "redis", 6379)
    assert url.password == secret["redis-password"]


def test_the_idempotency_mac_keys_come_from_the_secret(deployment: dict[str, Any]) -> None:
    gate = gate_container(deployment)
    env = {item["name"]: item for item in gate["env"]}
    assert "HANDLER_KIT_IDEMPOTENCY_KEYS" not in env, "keys in a plain environment variable"
    path = env["HANDLER_KIT_IDEMPOTENCY_KEYS_FILE"]["value"]
    key = secret_file_key(gate, deployment["spec"]["template"]["spec"], path)
    assert key in find("Secret", GATE_NAME)["stringData"]
