"""Checks of the handler-kit image and of docker/compose.yaml, run by docker/test-container.sh.

The shell script installs podman, builds the images and exports CONTAINERS_CONF; this runs the
containers, talks to them over HTTP(S) from 127.0.0.1 and tears everything down. It prints one
line per check and ends with ``N passed, M failed``; the exit status is 1 on any failure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

DOCKER_DIR = Path(__file__).resolve().parent
COMPOSE_FILE = DOCKER_DIR / "compose.yaml"
APP_LABEL = "handler-kit-test"

DENY_REASON = "Refunds over $500 need a human approver."
DENY_BODY = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": DENY_REASON,
    }
}


def pre_tool_use(amount: int, n: int = 1) -> dict:
    return {
        "session_id": f"ctest-{n}",
        "transcript_path": "/tmp/ctest.jsonl",
        "cwd": "/tmp",
        "hook_event_name": "PreToolUse",
        "tool_name": "issue_refund",
        "tool_input": {"order_id": "4821", "amount": amount},
        "tool_use_id": f"toolu_ctest_{n}_{amount}",
    }


class Results:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def check(self, name: str, fn: Callable[[], object]) -> bool:
        t0 = time.monotonic()
        try:
            detail = fn()
        except Exception as exc:
            self.failed += 1
            print(f"FAIL {name}: {type(exc).__name__}: {exc}", flush=True)
            return False
        self.passed += 1
        extra = f" ({detail})" if isinstance(detail, str) and detail else ""
        print(f"ok   {name}{extra} [{time.monotonic() - t0:.1f}s]", flush=True)
        return True


def podman(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        ["podman", *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"podman {' '.join(args[:3])} ... exited {proc.returncode}: "
            f"{(proc.stderr or proc.stdout).strip()[-800:]}"
        )
    return proc


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(client: httpx.Client, url: str, container: str, timeout: float = 60) -> str:
    """Wait until GET url/healthz answers 200; fail early if the container has stopped."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            r = client.get(f"{url}/healthz", timeout=2)
            if r.status_code == 200:
                return f"{time.monotonic() - deadline + timeout:.1f}s"
            last = r.status_code
        except httpx.HTTPError as exc:
            last = exc
        state = podman("inspect", "--format", "{{.State.Status}}", container, check=False)
        if state.stdout.strip() not in ("running", "created", "configured", "starting"):
            logs = podman("logs", "--tail", "30", container, check=False)
            error = podman(
                "inspect", "--format", "exit {{.State.ExitCode}} {{.State.Error}}", container,
                check=False,
            )  # fmt: skip
            raise AssertionError(
                f"container {container} is {state.stdout.strip() or '?'} "
                f"({error.stdout.strip()}): {(logs.stdout + logs.stderr)[-1500:]}"
            )
        time.sleep(0.5)
    raise AssertionError(f"{url}/healthz not healthy after {timeout}s (last: {last!r})")


def check_gate(res: Results, label: str, client: httpx.Client, url: str, token: str) -> None:
    """The refund gate's answers through the webhook, with and without a valid token."""
    auth = {"Authorization": f"Bearer {token}", "X-Runbear-Hook-Event": "PreToolUse"}

    def health() -> None:
        r = client.get(f"{url}/healthz")
        assert r.status_code == 200, r.status_code
        assert r.json().get("status") == "ok", r.text

    def deny_640() -> None:
        r = client.post(f"{url}/hooks", json=pre_tool_use(640), headers=auth)
        assert r.status_code == 200, f"{r.status_code} {r.text}"
        assert r.json() == DENY_BODY, r.text

    def allow_40() -> str:
        r = client.post(f"{url}/hooks", json=pre_tool_use(40), headers=auth)
        assert r.status_code in (200, 204), f"{r.status_code} {r.text}"
        body = r.json() if r.content else {}
        decision = (body.get("hookSpecificOutput") or {}).get("permissionDecision")
        assert decision != "deny" and body.get("decision") != "block", r.text
        return f"{r.status_code} {r.text.strip() or '(empty)'}"

    def wrong_token() -> None:
        bad = {**auth, "Authorization": "Bearer not-the-token"}
        r = client.post(f"{url}/hooks", json=pre_tool_use(640), headers=bad)
        assert r.status_code == 401, f"{r.status_code} {r.text}"
        assert "bearer" in r.headers.get("www-authenticate", "").lower(), r.headers

    def no_token() -> None:
        r = client.post(f"{url}/hooks", json=pre_tool_use(640))
        assert r.status_code == 401, f"{r.status_code} {r.text}"

    res.check(f"{label}: GET /healthz -> 200 status ok, without auth", health)
    res.check(f"{label}: $640 issue_refund -> deny, '{DENY_REASON}'", deny_640)
    res.check(f"{label}: $40 issue_refund -> not denied", allow_40)
    res.check(f"{label}: wrong bearer token -> 401", wrong_token)
    res.check(f"{label}: no Authorization header -> 401", no_token)


# ---- the image on its own --------------------------------------------------------------------


def test_image(res: Results, args: argparse.Namespace) -> None:
    tokens = ["ctest-token-first-0123456789", f"ctest-token-second-{os.getpid():010d}"]
    token = tokens[-1]  # the second of the comma-separated tokens: both are accepted
    port = free_port()
    name = f"{args.run_id}-single"
    url = f"http://127.0.0.1:{port}"

    def no_compiler() -> None:
        r = podman(
            "run", "--rm", "--entrypoint", "sh", args.image, "-c",
            "for c in gcc cc g++ make; do command -v $c && exit 1; done; exit 0",
        )  # fmt: skip
        assert r.returncode == 0, r.stdout

    def healthcheck_defined() -> str:
        r = podman("image", "inspect", "--format", "{{json .HealthCheck}}", args.image)
        hc = json.loads(r.stdout or "null")
        assert hc and "/healthz" in " ".join(hc.get("Test") or []), r.stdout
        return "HEALTHCHECK kept (docker format)"

    def refuses_without_tokens() -> str:
        r = podman(
            "run", "--rm", "--label", f"{APP_LABEL}={args.run_id}", args.image,
            check=False, timeout=60,
        )  # fmt: skip
        assert r.returncode != 0, "started without any token"
        out = r.stdout + r.stderr
        assert "HANDLER_KIT_TOKENS" in out, out[-500:]
        return f"exit {r.returncode}"

    res.check("image: no compiler (gcc, cc, g++, make) in the final stage", no_compiler)
    res.check("image: HEALTHCHECK on /healthz in the image config", healthcheck_defined)
    res.check("image: refuses to start without HANDLER_KIT_TOKENS", refuses_without_tokens)

    run = ["run", "-d", "--name", name, "--label", f"{APP_LABEL}={args.run_id}"]
    run += ["-p", f"127.0.0.1:{port}:8000", "-e", f"HANDLER_KIT_TOKENS={','.join(tokens)}"]
    started = res.check(
        "image: podman run -p 127.0.0.1:PORT:8000 -e HANDLER_KIT_TOKENS=...",
        lambda: podman(*run, args.image),
    )
    if not started:
        return
    try:
        with httpx.Client(timeout=10) as client:
            if not res.check("image: healthy over http", lambda: wait_healthy(client, url, name)):
                return
            check_gate(res, "image", client, url, token)

        def podman_healthcheck() -> str:
            r = podman("healthcheck", "run", name, check=False, timeout=30)
            assert r.returncode == 0, f"exit {r.returncode}: {r.stdout} {r.stderr}"
            status = podman(
                "inspect", "--format", "{{.State.Health.Status}}", name, check=False
            ).stdout.strip()
            assert status in ("healthy", ""), status
            return status or r.stdout.strip()

        def not_root() -> str:
            # PID 1 of the container is handler-kit serve (no shell wrapper): its real uid.
            status = podman("exec", name, "cat", "/proc/1/status").stdout
            uid_line = next(line for line in status.splitlines() if line.startswith("Uid:"))
            uids = uid_line.split()[1:]
            cmdline = podman("exec", name, "cat", "/proc/1/cmdline").stdout.replace("\0", " ")
            assert "serve" in cmdline, cmdline
            assert all(u != "0" for u in uids), uid_line
            user = podman("inspect", "--format", "{{.Config.User}}", name).stdout.strip()
            return f"uid {uids[0]}, image USER {user}"

        res.check("image: podman healthcheck run -> healthy", podman_healthcheck)
        res.check("image: the server process does not run as root", not_root)
    finally:
        podman("rm", "-f", "-t", "3", name, check=False)


# ---- Kubernetes: the Deployment and its Secret under podman kube play ------------------------

KUBE_DIR = DOCKER_DIR.parent / "deploy" / "kubernetes"


def kube_documents(args: argparse.Namespace, token: str, port: int) -> tuple[str, str]:
    """deploy/kubernetes's Deployment, Secret and ConfigMap as podman kube play takes them: one
    replica of the image under test, its port on the loopback, names made unique per run, no
    Redis or Postgres (the compose test has them), so no idempotency keys either."""
    import base64

    import yaml

    def load(name: str) -> dict:
        return yaml.safe_load((KUBE_DIR / name).read_text(encoding="utf-8"))

    name = f"{args.run_id}-handler-kit"
    secret = load("secret.yaml")
    secret["metadata"]["name"] = name
    # `data`, not `stringData`: podman (4.3) mounts no file for a stringData key; and it mounts
    # `data` values without decoding them (later versions decode), so there the token, made of
    # base64 letters, stands as its own encoding. The audit URL is left out: no database here.
    secret.pop("stringData")
    decodes = podman_decodes_secret_data(args)
    secret["data"] = {"tokens": base64.b64encode(token.encode()).decode() if decodes else token}
    config = load("configmap.yaml")
    config["metadata"]["name"] = name
    config["data"].pop("HANDLER_KIT_AUDIT_DURABLE")
    deployment = load("deployment.yaml")
    deployment["metadata"]["name"] = name
    deployment["spec"]["replicas"] = 1
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    container["image"] = args.image
    container["envFrom"][0]["configMapRef"]["name"] = name
    container["ports"][0].update(hostPort=port, hostIP="127.0.0.1")
    # no database, no Redis here: their secrets are not in this Secret
    without = {
        "HANDLER_KIT_AUDIT_FILE",
        "HANDLER_KIT_IDEMPOTENCY_REDIS_URL_FILE",
        "HANDLER_KIT_IDEMPOTENCY_KEYS_FILE",
    }
    container["env"] = [e for e in container["env"] if e["name"] not in without]
    for volume in pod["volumes"]:
        if "secret" in volume:
            volume["secret"]["secretName"] = name
    work = Path(args.work)
    play = work / "kube-play.yaml"
    play.write_text(yaml.safe_dump_all([secret, deployment]), encoding="utf-8")
    configmap = work / "kube-configmap.yaml"
    configmap.write_text(yaml.safe_dump(config), encoding="utf-8")
    return str(play), str(configmap)


def podman_decodes_secret_data(args: argparse.Namespace) -> bool:
    """Whether this podman's kube play decodes a Secret's base64 ``data`` into the files it
    mounts (as Kubernetes does), found by playing a pod that prints one."""
    import base64

    import yaml

    name = f"{args.run_id}-probe"
    docs = [
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
         "data": {"k": base64.b64encode(b"decoded").decode()}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
         "spec": {"restartPolicy": "Never", "containers": [
             {"name": "probe", "image": args.image, "command": ["cat", "/s/k"],
              "volumeMounts": [{"name": "s", "mountPath": "/s"}]}],
             "volumes": [{"name": "s", "secret": {"secretName": name, "optional": False}}]}},
    ]  # fmt: skip
    path = Path(args.work) / "kube-probe.yaml"
    path.write_text(yaml.safe_dump_all(docs), encoding="utf-8")
    try:
        podman("kube", "play", str(path), timeout=120)
        deadline = time.monotonic() + 30
        out = ""
        while time.monotonic() < deadline and not out:
            out = podman("logs", f"{name}-probe", check=False).stdout.strip()
            time.sleep(0.5)
        return out == "decoded"
    finally:
        podman("kube", "down", str(path), check=False)
        podman("secret", "rm", name, check=False)


def test_kube_play(res: Results, args: argparse.Namespace) -> None:
    token = f"ctestKubeToken{os.getpid():010d}abcd"  # base64 letters, 28 of them
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    play, configmap = kube_documents(args, token, port)
    name = f"{args.run_id}-handler-kit"
    try:
        if not res.check(
            "kube: podman kube play deployment.yaml + secret.yaml (+ configmap.yaml)",
            lambda: podman("kube", "play", "--configmap", configmap, play, timeout=180),
        ):
            return
        names = podman("ps", "-a", "--format", "{{.Names}}", "--filter", f"pod={name}-pod-0")
        container = next(n for n in names.stdout.split() if n.endswith("-handler-kit"))

        with httpx.Client(timeout=10) as client:
            if not res.check(
                "kube: liveness /healthz answers",
                lambda: wait_healthy(client, url, container, timeout=90),
            ):
                return

            def ready() -> str:
                r = client.get(f"{url}/readyz")
                assert r.status_code == 200, f"{r.status_code} {r.text}"
                return r.text.strip()

            res.check("kube: readiness /readyz -> 200", ready)

            def secret_file() -> str:
                held = podman("exec", container, "cat", "/etc/handler-kit/secrets/tokens")
                accepted = held.stdout.strip()
                assert accepted == token, "the mounted Secret does not hold the token"
                env = podman("inspect", "--format", "{{json .Config.Env}}", container).stdout
                assert accepted not in env and token not in env, "token in the environment"
                auth = {"Authorization": f"Bearer {accepted}"}
                r = client.post(f"{url}/hooks", json=pre_tool_use(640), headers=auth)
                assert r.status_code == 200 and r.json() == DENY_BODY, f"{r.status_code} {r.text}"
                return "token read from the mounted Secret, not from the environment"

            res.check("kube: $640 -> deny with the token of the Secret", secret_file)
    finally:
        podman("kube", "down", play, check=False, timeout=120)
        podman("secret", "rm", name, check=False)


# ---- compose: nginx, three replicas, Redis, Postgres; durable audit ------------------------


def write_tls(folder: Path) -> Path:
    """A test CA and the proxy's certificate for localhost/127.0.0.1 (trustme)."""
    import trustme

    folder.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA()
    cert = ca.issue_cert("localhost", "127.0.0.1")
    ca.cert_pem.write_to_path(str(folder / "ca.pem"))
    cert.private_key_pem.write_to_path(str(folder / "key.pem"))
    cert.cert_chain_pems[0].write_to_path(str(folder / "cert.pem"))
    for pem in cert.cert_chain_pems[1:]:
        pem.write_to_path(str(folder / "cert.pem"), append=True)
    folder.chmod(0o755)
    for f in folder.iterdir():
        f.chmod(0o644)
    return folder / "ca.pem"


def write_secrets(folder: Path, token: str) -> None:
    """The files compose's `secrets:` mount: read by uid 10001 in the gates."""
    import secrets

    folder.mkdir(parents=True, exist_ok=True)
    password = secrets.token_urlsafe(18)
    (folder / "tokens").write_text(token + "\n", encoding="utf-8")
    (folder / "postgres-password").write_text(password + "\n", encoding="utf-8")
    url = f"postgresql://handler_kit:{password}@postgres:5432/handler_kit"
    (folder / "audit-url").write_text(url + "\n", encoding="utf-8")
    keys = secrets.token_hex(32)
    (folder / "idempotency-keys").write_text(keys + "\n", encoding="utf-8")
    for f in folder.iterdir():
        f.chmod(0o644)


def compose_container(project: str, service: str) -> str:
    """The container of a compose service, found by podman-compose's labels."""
    r = podman(
        "ps", "-a", "--format", "{{.Names}}",
        "--filter", f"label=io.podman.compose.project={project}",
        "--filter", f"label=com.docker.compose.service={service}",
    )  # fmt: skip
    names = r.stdout.split()
    assert len(names) == 1, f"containers of service {service}: {names}"
    return names[0]


def compose_env(args: argparse.Namespace, work: Path, token: str, port: int) -> dict[str, str]:
    import random

    write_secrets(work / "secrets", token)
    net = f"10.{random.randint(90, 250)}.{random.randint(0, 255)}"
    return {
        **os.environ,
        "HANDLER_KIT_IMAGE": args.image,
        "REDIS_IMAGE": args.redis_image,
        "NGINX_IMAGE": args.nginx_image,
        "POSTGRES_IMAGE": args.postgres_image,
        "HANDLER_KIT_TLS_DIR": str(work / "tls"),
        "HANDLER_KIT_SECRETS_DIR": str(work / "secrets"),
        "HANDLER_KIT_NET": net,
        "PROXY_PORT": str(port),
    }


def psql(container: str, sql: str) -> list[str]:
    r = podman(
        "exec", container, "psql", "-U", "handler_kit", "-d", "handler_kit", "-At", "-c", sql
    )
    return [line for line in r.stdout.splitlines() if line]


class Load:
    """Hook calls to the gate's route through the proxy from several client threads, each with
    its own keep-alive connection; every call a distinct tool_use_id, so each received answer
    names its record."""

    def __init__(self, url: str, ca_file: str | bool, token: str, prefix: str) -> None:
        self.url, self.ca_file, self.token, self.prefix = url, ca_file, token, prefix
        self.received: list[str] = []  # tool_use_ids of the answers clients got
        # the gate's deny to a call whose replica failed: the proxy sent it again without its
        # body, and the gate answered its safe decision to an input it could not read
        self.unread = 0
        self.latencies: list[float] = []  # seconds, of every call
        self.errors: dict[str, int] = {}
        self.sent = 0
        self.lock = threading.Lock()

    def run(self, total: int, threads: int, on_progress: Callable[[int], None] | None = None):
        counter = iter(range(total))

        def worker() -> None:
            auth = {"Authorization": f"Bearer {self.token}"}
            with httpx.Client(verify=self.ca_file, timeout=30) as client:
                while True:
                    with self.lock:
                        n = next(counter, None)
                        if n is None:
                            return
                        self.sent += 1
                    if on_progress is not None:
                        on_progress(n)
                    event = pre_tool_use(640, n)
                    event["tool_use_id"] = f"{self.prefix}{n}"
                    t0 = time.perf_counter()
                    try:
                        r = client.post(f"{self.url}/hooks/refund_gate", json=event, headers=auth)
                        kind = None if r.status_code == 200 else f"HTTP {r.status_code}"
                        if kind is None and r.json() != DENY_BODY:
                            output = r.json().get("hookSpecificOutput") or {}
                            denied = output.get("permissionDecision") == "deny"
                            kind = "unread" if denied else "wrong answer"
                    except httpx.HTTPError as exc:
                        kind = type(exc).__name__
                    with self.lock:
                        self.latencies.append(time.perf_counter() - t0)
                        if kind is None:
                            self.received.append(event["tool_use_id"])
                        elif kind == "unread":
                            self.unread += 1
                        else:
                            self.errors[kind] = self.errors.get(kind, 0) + 1

        pool = [threading.Thread(target=worker) for _ in range(threads)]
        t0 = time.monotonic()
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        return time.monotonic() - t0


def slow_clients(port: int, ca_file: str, count: int, seconds: float) -> Callable[[], dict]:
    """``count`` connections to the proxy that finish TLS and then send a request head one
    header line a second, never ending it (slowloris). Returns a function that stops them and
    says how many the proxy had closed on its own."""
    import ssl

    context = ssl.create_default_context(cafile=ca_file)
    stop = threading.Event()
    stats = {"opened": 0, "closed_by_proxy": 0, "failed": 0}
    lock = threading.Lock()

    def one() -> None:
        try:
            raw = socket.create_connection(("127.0.0.1", port), timeout=10)
            conn = context.wrap_socket(raw, server_hostname="localhost")
            conn.sendall(b"POST /hooks HTTP/1.1\r\nHost: localhost\r\n")
        except OSError:
            with lock:
                stats["failed"] += 1
            return
        with lock:
            stats["opened"] += 1
        deadline = time.monotonic() + seconds
        try:
            while not stop.is_set() and time.monotonic() < deadline:
                conn.sendall(b"X-Slow: 1\r\n")
                stop.wait(1.0)
        except OSError:
            with lock:
                stats["closed_by_proxy"] += 1
        finally:
            conn.close()

    threads = [threading.Thread(target=one, daemon=True) for _ in range(count)]
    for t in threads:
        t.start()

    def finish() -> dict:
        stop.set()
        for t in threads:
            t.join(timeout=15)
        return stats

    return finish


def test_compose(res: Results, args: argparse.Namespace) -> None:
    token = f"ctest-compose-token-{os.getpid():010d}"
    work = Path(args.work)
    ca_file = str(write_tls(work / "tls"))
    port = free_port()
    url = f"https://127.0.0.1:{port}"
    env = compose_env(args, work, token, port)
    compose = [args.podman_compose, "-p", args.run_id, "-f", str(COMPOSE_FILE)]

    def run_compose(*cmd: str, timeout: float = 240) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            [*compose, *cmd], env=env, capture_output=True, text=True, timeout=timeout
        )
        if proc.returncode != 0:
            raise AssertionError(
                f"podman-compose {' '.join(cmd)} exited {proc.returncode}: "
                f"{(proc.stderr + proc.stdout)[-1500:]}"
            )
        return proc

    try:
        if not res.check(
            "compose: up -d (proxy, gate1-3, redis, postgres; durable audit)",
            lambda: run_compose("up", "-d", "--no-build"),
        ):
            return
        gates = [compose_container(args.run_id, f"gate{i}") for i in (1, 2, 3)]
        postgres = compose_container(args.run_id, "postgres")
        proxy = compose_container(args.run_id, "proxy")

        def all_ready() -> str:
            deadline = time.monotonic() + 120
            probe = "import urllib.request as r; print(r.urlopen('http://127.0.0.1:8000/readyz', timeout=4).status)"  # noqa: E501
            pending = list(gates)
            while pending and time.monotonic() < deadline:
                for gate in list(pending):
                    r = podman("exec", gate, "python3", "-c", probe, check=False, timeout=30)
                    if r.stdout.strip() == "200":
                        pending.remove(gate)
                time.sleep(1)
            if pending:
                logs = podman("logs", "--tail", "20", pending[0], check=False)
                raise AssertionError(f"not ready: {pending}: {(logs.stdout + logs.stderr)[-1500:]}")
            with httpx.Client(verify=ca_file, timeout=10) as client:
                return wait_healthy(client, url, proxy, timeout=60)

        if not res.check("compose: every gate /readyz 200, the proxy answers over TLS", all_ready):
            return
        with httpx.Client(verify=ca_file, timeout=10) as client:
            check_gate(res, "compose via proxy", client, url, token)

            def oversized_body() -> str:
                # over the proxy's cap: the gate, not nginx, answers, with its safe decision
                auth = {"Authorization": f"Bearer {token}"}
                body = b'{"hook_event_name": "PreToolUse", "pad": "' + b"x" * (3 << 20) + b'"}'
                r = client.post(f"{url}/hooks/refund_gate", content=body, headers=auth, timeout=30)
                decision = (r.json().get("hookSpecificOutput") or {}).get("permissionDecision")
                assert r.status_code == 200 and decision == "deny", f"{r.status_code} {r.text}"
                return "3 MiB body: deny (fail closed), not a 413 a runtime would proceed on"

            res.check("compose via proxy: body over the proxy's cap -> gate's deny", oversized_body)

        def no_gate_published() -> str:
            ports = [podman("port", gate, check=False).stdout.strip() for gate in gates]
            assert not any(ports), ports
            return "only the proxy has a published port"

        res.check("compose: the gates are not reachable from the host", no_gate_published)

        def tokens_from_secret() -> str:
            env_out = podman("inspect", "--format", "{{json .Config.Env}}", gates[0]).stdout
            assert token not in env_out and "postgresql://" not in env_out, "secret in env"
            return "HANDLER_KIT_TOKENS_FILE, HANDLER_KIT_AUDIT_FILE"

        res.check("compose: no token or database URL in a gate's environment", tokens_from_secret)

        total, threads = args.load_requests, 10
        load = Load(url, ca_file, token, prefix=f"toolu_load_{os.getpid()}_")
        killed: dict[str, float] = {}

        def kill_one(n: int) -> None:
            if n == total // 3 and not killed:
                killed["at"] = time.monotonic()
                podman("kill", gates[1], check=False)

        def load_with_kill() -> str:
            elapsed = load.run(total, threads, on_progress=kill_one)
            errors = sum(load.errors.values())
            print(
                f"info load: {total} calls, {threads} clients, {elapsed:.1f}s, "
                f"{len(load.received)} answers, {load.unread} denies of an unread input, "
                f"{errors} errors {load.errors or ''} (gate2 killed after {total // 3} calls)",
                flush=True,
            )
            assert killed, "the kill never happened"
            # a runtime proceeds on any answer but a 2xx: not one may reach a client
            not_2xx = {k: n for k, n in load.errors.items() if k.startswith("HTTP ")}
            assert not not_2xx, f"non-2xx answers on the gate route: {not_2xx}"
            assert "wrong answer" not in load.errors, load.errors
            assert len(load.received) >= total * 0.9, load.errors
            return (
                f"{len(load.received)} answered, {load.unread} denied unread (replica gone), "
                f"0 non-2xx, {errors} client errors"
            )

        if res.check(
            f"compose: {total} calls via proxy, podman kill gate2 mid-load", load_with_kill
        ):

            def every_answer_recorded() -> str:
                ids = psql(
                    postgres,
                    "SELECT tool_use_id FROM handler_kit_audit WHERE kind = 'decision' "
                    f"AND tool_use_id LIKE '{load.prefix}%'",
                )
                missing = set(load.received) - set(ids)
                assert not missing, (
                    f"{len(missing)} answers without a record: {sorted(missing)[:5]}"
                )
                replicas = psql(
                    postgres,
                    "SELECT replica, count(*) FROM handler_kit_audit WHERE kind = 'decision' "
                    f"AND tool_use_id LIKE '{load.prefix}%' GROUP BY replica ORDER BY replica",
                )
                return (
                    f"{len(load.received)} received, all in Postgres "
                    f"({len(ids)} answer records; per replica: {', '.join(replicas)})"
                )

            res.check(
                "compose: every answer a client received has its record", every_answer_recorded
            )

        def slowloris() -> str:
            finish = slow_clients(port, ca_file, count=200, seconds=20)
            time.sleep(2)
            answered, failed = 0, []
            auth = {"Authorization": f"Bearer {token}"}
            with httpx.Client(verify=ca_file, timeout=10) as client:
                t_end = time.monotonic() + 14
                n = 0
                while time.monotonic() < t_end:
                    n += 1
                    try:
                        r = client.post(f"{url}/hooks", json=pre_tool_use(640, n), headers=auth)
                        if r.status_code == 200 and r.json() == DENY_BODY:
                            answered += 1
                        else:
                            failed.append(r.status_code)
                    except httpx.HTTPError as exc:
                        failed.append(type(exc).__name__)
                    time.sleep(0.2)
            stats = finish()
            print(f"info slow clients: {stats}; calls during the attack: {answered} answered, "
                  f"failures {failed}", flush=True)  # fmt: skip
            assert stats["opened"] >= 150, stats
            assert answered >= 20 and not failed, (answered, failed)
            assert stats["closed_by_proxy"] >= stats["opened"] * 0.9, stats
            closed = f"{stats['closed_by_proxy']} of {stats['opened']}"
            return f"{answered} answered during it; the proxy closed {closed}"

        res.check("compose: 200 slow (slowloris) clients on the proxy; the gates still answer",
                  slowloris)  # fmt: skip
    finally:
        down = subprocess.run(
            [*compose, "down", "-v", "-t", "3"], env=env, capture_output=True, text=True,
            timeout=180,
        )  # fmt: skip
        if down.returncode != 0:
            print(f"warning: podman-compose down: {down.stderr[-500:]}", flush=True)
        shutil.rmtree(work / "tls", ignore_errors=True)
        shutil.rmtree(work / "secrets", ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--image", required=True)
    parser.add_argument("--redis-image", required=True)
    parser.add_argument("--nginx-image", required=True)
    parser.add_argument("--postgres-image", required=True)
    parser.add_argument("--load-requests", type=int, default=600)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--podman-compose", required=True)
    parser.add_argument("--work", required=True, help="a temporary folder (TLS files)")
    parser.add_argument("--skip-compose", action="store_true")
    parser.add_argument("--only", choices=("image", "kube", "compose"))
    args = parser.parse_args()

    # On SIGTERM, unwind through the finally blocks that stop the containers.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    res = Results()
    t0 = time.monotonic()
    try:
        if args.only in (None, "image"):
            test_image(res, args)
        if args.only in (None, "kube"):
            test_kube_play(res, args)
        if args.only in (None, "compose") and not args.skip_compose:
            test_compose(res, args)
    except Exception as exc:  # a broken harness is a failure, never a silent pass
        res.failed += 1
        print(f"FAIL harness: {type(exc).__name__}: {exc}", flush=True)
    print(f"checks took {time.monotonic() - t0:.0f}s", flush=True)
    print(f"{res.passed} passed, {res.failed} failed", flush=True)
    return 1 if res.failed or not res.passed else 0


if __name__ == "__main__":
    sys.exit(main())
