"""deploy/kubernetes: every object valid against the Kubernetes schemas (kubernetes-validate,
offline, strict: a misspelt field fails), listed in the Kustomization, and wired together: the
probes on the routes the server serves, a preStop delay inside the grace period, resources set,
tokens from the Secret as a mounted file, selectors that match the gate pods."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest

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
