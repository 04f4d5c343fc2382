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


# ---- compose: two replicas over TLS, Redis ---------------------------------------------------


def write_tls(folder: Path) -> Path:
    """A test CA and a server certificate for localhost/127.0.0.1 (trustme)."""
    import trustme

    folder.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA()
    cert = ca.issue_cert("localhost", "127.0.0.1", "gate1", "gate2")
    ca.cert_pem.write_to_path(str(folder / "ca.pem"))
    cert.private_key_pem.write_to_path(str(folder / "key.pem"))
    cert.cert_chain_pems[0].write_to_path(str(folder / "cert.pem"))
    for pem in cert.cert_chain_pems[1:]:
        pem.write_to_path(str(folder / "cert.pem"), append=True)
    folder.chmod(0o755)
    for f in folder.iterdir():
        f.chmod(0o644)  # the server runs as uid 10001 and reads the key through a bind mount
    return folder / "ca.pem"


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


def test_compose(res: Results, args: argparse.Namespace) -> None:
    token = f"ctest-compose-token-{os.getpid():010d}"
    tls_dir = Path(args.work) / "tls"
    ca_file = write_tls(tls_dir)
    ports = {"gate1": free_port(), "gate2": free_port()}
    env = {
        **os.environ,
        "HANDLER_KIT_IMAGE": args.image,
        "REDIS_IMAGE": args.redis_image,
        "HANDLER_KIT_TOKENS": token,
        "HANDLER_KIT_TLS_DIR": str(tls_dir),
        "HANDLER_KIT_WORKERS": "2",  # HANDLER_KIT_WORKERS reaches `serve`: 2 workers a replica
        "GATE1_PORT": str(ports["gate1"]),
        "GATE2_PORT": str(ports["gate2"]),
    }
    compose = [args.podman_compose, "-p", args.run_id, "-f", str(COMPOSE_FILE)]

    def run_compose(*cmd: str, timeout: float = 180) -> subprocess.CompletedProcess:
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
            "compose: podman-compose up -d (redis, gate1, gate2)",
            lambda: run_compose("up", "-d", "--no-build"),
        ):
            return
        with httpx.Client(verify=str(ca_file), timeout=10) as client:
            for service, port in ports.items():
                url = f"https://127.0.0.1:{port}"
                container = compose_container(args.run_id, service)
                if res.check(
                    f"compose {service}: healthy over https with the test CA",
                    lambda url=url, container=container: wait_healthy(client, url, container),
                ):
                    check_gate(res, f"compose {service}", client, url, token)

            def plain_http_refused() -> None:
                try:
                    r = httpx.get(f"http://127.0.0.1:{ports['gate1']}/healthz", timeout=3)
                except httpx.HTTPError:
                    return
                raise AssertionError(f"plain http answered {r.status_code}")

            res.check("compose gate1: plain http is not served (TLS only)", plain_http_refused)

        def redis_reachable() -> str:
            # The replicas reach Redis by its service name on the compose network.
            probe = (
                "import os, socket, urllib.parse as u; "
                "p = u.urlparse(os.environ['HANDLER_KIT_IDEMPOTENCY_REDIS_URL']); "
                "s = socket.create_connection((p.hostname, p.port or 6379), timeout=5); "
                "s.sendall(b'PING\\r\\n'); print(s.recv(64).decode().strip())"
            )
            out = []
            for service in ports:
                container = compose_container(args.run_id, service)
                r = podman("exec", container, "python3", "-c", probe)
                assert r.stdout.strip() == "+PONG", r.stdout + r.stderr
                out.append(f"{service} PONG")
            return ", ".join(out)

        res.check("compose: both replicas reach redis via HANDLER_KIT_IDEMPOTENCY_REDIS_URL",
                  redis_reachable)  # fmt: skip
        # Not a check: keys appear only when a served handler is declared idempotent=True.
        keys = podman(
            "exec", compose_container(args.run_id, "redis"), "redis-cli", "dbsize", check=False
        )
        print(f"info redis keys after the calls: {(keys.stdout or keys.stderr).strip()}")
    finally:
        down = subprocess.run(
            [*compose, "down", "-t", "3"], env=env, capture_output=True, text=True, timeout=120
        )
        if down.returncode != 0:
            print(f"warning: podman-compose down: {down.stderr[-500:]}", flush=True)
        shutil.rmtree(tls_dir, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--image", required=True)
    parser.add_argument("--redis-image", required=True)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--podman-compose", required=True)
    parser.add_argument("--work", required=True, help="a temporary folder (TLS files)")
    parser.add_argument("--skip-compose", action="store_true")
    args = parser.parse_args()

    # On SIGTERM, unwind through the finally blocks that stop the containers.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    res = Results()
    t0 = time.monotonic()
    try:
        test_image(res, args)
        if not args.skip_compose:
            test_compose(res, args)
    except Exception as exc:  # a broken harness is a failure, never a silent pass
        res.failed += 1
        print(f"FAIL harness: {type(exc).__name__}: {exc}", flush=True)
    print(f"checks took {time.monotonic() - t0:.0f}s", flush=True)
    print(f"{res.passed} passed, {res.failed} failed", flush=True)
    return 1 if res.failed or not res.passed else 0


if __name__ == "__main__":
    sys.exit(main())
