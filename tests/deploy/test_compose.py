"""docker/compose.yaml and docker/nginx.conf: only the proxy is published, three gate replicas
that read their tokens and database URL from secret files (no credential in the compose file),
and an nginx upstream that lists exactly the compose file's gates."""

from __future__ import annotations

from typing import Any

from handler_kit.config import SETTINGS
from tests.deploy.support import COMPOSE_FILE, NGINX_CONF, upstream_servers

SETTING_NAMES = {setting.env for setting in SETTINGS}
GATES = ("gate1", "gate2", "gate3")


def gates(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: svc for name, svc in compose["services"].items() if name.startswith("gate")}


def test_proxy_three_gates_redis_and_postgres(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) == {"proxy", *GATES, "redis", "postgres"}
    published = [name for name, svc in compose["services"].items() if svc.get("ports")]
    assert published == ["proxy"], "only the TLS-terminating proxy is reachable from outside"
    for name, svc in compose["services"].items():
        assert "healthcheck" in svc or name == "redis", f"{name} has no health check"


def test_gates_read_secrets_from_files(compose: dict[str, Any]) -> None:
    secrets = compose["secrets"]
    assert all(set(spec) == {"file"} for spec in secrets.values()), secrets
    for name, svc in gates(compose).items():
        env = svc["environment"]
        assert "HANDLER_KIT_TOKENS" not in env and "HANDLER_KIT_AUDIT" not in env, name
        mounted = {f"/run/secrets/{s}" for s in svc["secrets"]}
        assert env["HANDLER_KIT_TOKENS_FILE"] in mounted
        assert env["HANDLER_KIT_AUDIT_FILE"] in mounted
        # the MAC keys of the shared idempotency records, the same file for every gate
        assert "HANDLER_KIT_IDEMPOTENCY_KEYS" not in env, name
        assert env["HANDLER_KIT_IDEMPOTENCY_KEYS_FILE"] in mounted
        unknown = [n for n in env if n.startswith("HANDLER_KIT_") and n not in SETTING_NAMES]
        assert not unknown, f"{name}: not settings: {unknown}"
        assert "/readyz" in " ".join(svc["healthcheck"]["test"])
    postgres = compose["services"]["postgres"]["environment"]
    assert set(postgres) == {"POSTGRES_USER", "POSTGRES_DB", "POSTGRES_PASSWORD_FILE"}


def test_no_credential_in_the_compose_file() -> None:
    text = COMPOSE_FILE.read_text(encoding="utf-8")
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        assert "postgresql://" not in line and "Bearer" not in line, line
        assert "PASSWORD:" not in line and "TOKENS:" not in line, line


def test_the_proxy_spreads_over_exactly_the_compose_gates(compose: dict[str, Any]) -> None:
    conf = NGINX_CONF.read_text(encoding="utf-8")
    assert upstream_servers(conf) == [f"{gate}:8000" for gate in GATES]
    assert sorted(compose["services"]["proxy"]["depends_on"]) == list(GATES)
    # the limits the proxy is there for
    for directive in (
        "client_header_timeout",
        "client_body_timeout",
        "send_timeout",
        "client_max_body_size",
        "limit_conn ",
        "keepalive_timeout",
        "ssl_certificate",
        "proxy_next_upstream",
    ):
        assert directive in conf, directive
    # a POST a replica may have read is never sent to a second one
    assert "non_idempotent" not in conf.split("proxy_next_upstream ", 1)[1].split(";", 1)[0]


def test_the_gates_trust_the_proxy_alone_and_keep_their_addresses(
    compose: dict[str, Any],
) -> None:
    """nginx resolves the gates' names once: a restarted replica must come back where it was."""
    (subnet,) = [c["subnet"] for c in compose["networks"]["default"]["ipam"]["config"]]
    assert subnet.endswith(".0/24")
    net = subnet.removesuffix(".0/24")
    proxy = compose["services"]["proxy"]["networks"]["default"]["ipv4_address"]
    assert proxy.startswith(net)
    addresses = set()
    for svc in gates(compose).values():
        assert svc["environment"]["HANDLER_KIT_TRUSTED_PROXIES"] == proxy
        address = svc["networks"]["default"]["ipv4_address"]
        assert address.startswith(net) and address != proxy
        addresses.add(address)
    assert len(addresses) == len(GATES)
