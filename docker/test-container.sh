#!/usr/bin/env bash
# Container test: builds docker/Dockerfile with podman, runs the image and docker/compose.yaml,
# and calls them over HTTP(S) (checks in docker/container_test.py). Run by `make test-container`
# and .ci/run. Idempotent; installs what it needs when missing; the first run takes a few
# minutes (debootstrap of the base image), later runs reuse the cached images.
#
# Environment (all optional):
#   HANDLER_KIT_CONTAINER_CACHE  cache folder (podman-compose venv)   default ~/.cache/handler-kit/container
#   HANDLER_KIT_TEST_BASE        base image to build on                default localhost/bookworm-py:latest,
#                                                                      made here by debootstrap if missing
#   DEBIAN_MIRROR                mirror for debootstrap                default: first URIs: of the apt sources
#   KEEP_IMAGES=0                remove the images built here at the end (the base image stays cached)
#
# Why a local base image: no container registry is reachable from these machines, so the
# Dockerfile's default base (python:3.12-slim) and compose's redis image cannot be pulled. A
# Debian base is debootstrapped once and imported; Redis, nginx and PostgreSQL are built from it
# with Debian's packages (docker/*.Containerfile).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

BASE_IMAGE="${HANDLER_KIT_TEST_BASE:-localhost/bookworm-py:latest}"
CA_BASE_IMAGE="localhost/bookworm-py-ca:latest"
IMAGE="localhost/handler-kit:test"
BUILD_STAGE_IMAGE="localhost/handler-kit-build-stage:test"
REDIS_IMAGE_LOCAL="localhost/handler-kit-redis:test"
NGINX_IMAGE_LOCAL="localhost/handler-kit-nginx:test"
POSTGRES_IMAGE_LOCAL="localhost/handler-kit-postgres:test"
CACHE="${HANDLER_KIT_CONTAINER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/handler-kit/container}"
RUN_ID="hkct-$$"
START=$(date +%s)

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
log() { printf '[test-container %3ss] %s\n' "$(($(date +%s) - START))" "$*" >&2; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/handler-kit-ctest.XXXXXX")"
# shellcheck disable=SC2317  # (called by the EXIT trap)
cleanup() {
  local rc=$?
  set +e
  # Safety net: container_test.py tears down what it starts; this catches an interrupted run.
  if command -v podman >/dev/null 2>&1; then
    for label in "handler-kit-test=$RUN_ID" "io.podman.compose.project=$RUN_ID"; do
      podman ps -aq --filter "label=$label" | xargs -r podman rm -f -t 2 >/dev/null 2>&1
    done
    podman pod rm -f "pod_$RUN_ID" >/dev/null 2>&1
    podman network rm -f "${RUN_ID}_default" >/dev/null 2>&1
    podman volume ls -q --filter "label=io.podman.compose.project=$RUN_ID" \
      | xargs -r podman volume rm -f >/dev/null 2>&1
    podman secret rm "$RUN_ID-handler-kit" >/dev/null 2>&1
    if [ "${KEEP_IMAGES:-1}" = 0 ]; then
      podman rmi -f "$IMAGE" "$BUILD_STAGE_IMAGE" "$REDIS_IMAGE_LOCAL" "$NGINX_IMAGE_LOCAL" \
        "$POSTGRES_IMAGE_LOCAL" >/dev/null 2>&1
    fi
  fi
  remove_tree "$WORK"
  exit "$rc"
}
# rm -rf that never follows a mount out of the tree: debootstrap mounts /proc, /sys and device
# files into its target, and an interrupted run can leave them mounted.
remove_tree() {
  [ -e "$1" ] || return 0
  awk -v p="$1/" 'index($2, p) == 1 {print $2}' /proc/mounts | sort -r \
    | while read -r m; do as_root umount -l "$m" 2>/dev/null; done
  as_root rm -rf --one-file-system "$1"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

setup_failed() {
  log "setup failed: $*"
  echo "0 passed, 1 failed"
  exit 1
}

# ---- 1. tools -------------------------------------------------------------------------------
missing=()
for tool in podman buildah debootstrap runc newuidmap slirp4netns fuse-overlayfs; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing podman and friends (missing: ${missing[*]})"
  as_root apt-get update -qq || setup_failed "apt-get update"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    podman buildah debootstrap runc uidmap slirp4netns fuse-overlayfs >/dev/null \
    || setup_failed "apt-get install podman"
fi

# podman on these machines cannot raise rlimits to its defaults, and crun does not support the
# cgroup layout: a containers.conf of our own.
cat >"$WORK/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
EOF
export CONTAINERS_CONF="$WORK/containers.conf"

# Project venv (httpx, trustme) for the checks; `make test-container` has made it already.
PY="$REPO/.venv/bin/python"
if ! [ -x "$PY" ] || ! "$PY" -c 'import httpx, trustme' >/dev/null 2>&1; then
  log "installing the project venv (make install)"
  make -s install >/dev/null || setup_failed "make install"
fi

# podman-compose in a venv of its own under the cache folder (not a project dependency).
PC_VENV="$CACHE/podman-compose-venv"
PODMAN_COMPOSE="$PC_VENV/bin/podman-compose"
if ! [ -x "$PODMAN_COMPOSE" ] || ! "$PODMAN_COMPOSE" --version >/dev/null 2>&1; then
  log "installing podman-compose into $PC_VENV"
  rm -rf "$PC_VENV"
  mkdir -p "$CACHE"
  python3 -m venv "$PC_VENV" || setup_failed "venv for podman-compose"
  "$PC_VENV/bin/pip" install -q --disable-pip-version-check "podman-compose>=1.1,<2" \
    >"$WORK/pip.log" 2>&1 || { tail -20 "$WORK/pip.log" >&2; setup_failed "pip install podman-compose"; }
fi

# ---- 2. base image (cached) ------------------------------------------------------------------
if ! podman image exists "$BASE_IMAGE"; then
  [ "$BASE_IMAGE" = "localhost/bookworm-py:latest" ] \
    || setup_failed "base image $BASE_IMAGE not found"
  mirror="${DEBIAN_MIRROR:-}"
  if [ -z "$mirror" ]; then
    mirror="$(grep -h -m1 '^URIs:' /etc/apt/sources.list.d/debian.sources 2>/dev/null \
      | awk '{print $2}' || true)"
  fi
  if [ -z "$mirror" ]; then
    mirror="$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)"
  fi
  [ -n "$mirror" ] || setup_failed "no Debian mirror found in the apt sources"
  log "building $BASE_IMAGE with debootstrap from $mirror (about a minute)"
  rootfs="$WORK/rootfs"
  as_root debootstrap --variant=minbase \
    --include=python3,python3-venv,python3-pip,ca-certificates \
    bookworm "$rootfs" "$mirror" >"$WORK/debootstrap.log" 2>&1 \
    || { tail -20 "$WORK/debootstrap.log" >&2; setup_failed "debootstrap"; }
  as_root rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  as_root tar -C "$rootfs" --numeric-owner -cf "$WORK/base.tar" . || setup_failed "tar rootfs"
  remove_tree "$rootfs"
  podman import --change 'CMD ["/bin/bash"]' "$WORK/base.tar" "$BASE_IMAGE" >/dev/null 2>&1 \
    || setup_failed "podman import"
  rm -f "$WORK/base.tar"
fi

# This machine reaches the package registries through a TLS-intercepting proxy: for the test
# build only, a derived base image trusts its CA certificates, so the Dockerfile's RUN steps
# (pip) work unchanged. The certificates go into a temporary build context, never the repo.
BUILD_BASE="$BASE_IMAGE"
shopt -s nullglob
cas=(/usr/local/share/ca-certificates/*.crt)
shopt -u nullglob
if [ "${#cas[@]}" -gt 0 ]; then
  mkdir -p "$WORK/ca"
  cp "${cas[@]}" "$WORK/ca/"
  cat >"$WORK/ca/Containerfile" <<EOF
FROM $BASE_IMAGE
COPY *.crt /usr/local/share/ca-certificates/
RUN update-ca-certificates >/dev/null 2>&1
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt \\
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \\
    REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
EOF
  podman build -q --format docker -t "$CA_BASE_IMAGE" "$WORK/ca" >/dev/null \
    || setup_failed "base image with the proxy CA certificates"
  BUILD_BASE="$CA_BASE_IMAGE"
fi

# ---- 3. images under test --------------------------------------------------------------------
# --format docker: the OCI format has no HEALTHCHECK, podman would drop it.
# Every build here is labelled, so that what a rebuild leaves behind (the previous image and
# its unreferenced cache layers) can be pruned without touching anybody else's images.
BUILD_LABEL="org.handler-kit.container-test=1"
build() {  # build NAME LOG ARGS...
  local name=$1 logfile=$2
  shift 2
  podman build --format docker --label "$BUILD_LABEL" --build-arg "BASE=$BUILD_BASE" \
    -t "$name" "$@" >"$logfile" 2>&1 || { tail -40 "$logfile" >&2; return 1; }
}
log "building $IMAGE from docker/Dockerfile"
t0=$(date +%s)
# The build stage is tagged too: untagged, its layers (the dependency wheels) would count as
# dangling and the prune below would throw the cache away.
build "$BUILD_STAGE_IMAGE" "$WORK/build.log" --target build -f docker/Dockerfile . \
  || setup_failed "podman build handler-kit (build stage)"
build "$IMAGE" "$WORK/build.log" -f docker/Dockerfile . || setup_failed "podman build handler-kit"
log "built $IMAGE in $(($(date +%s) - t0))s"
mkdir -p "$WORK/empty"
build "$REDIS_IMAGE_LOCAL" "$WORK/redis-build.log" -f docker/redis.Containerfile "$WORK/empty" \
  || setup_failed "podman build redis"
build "$NGINX_IMAGE_LOCAL" "$WORK/nginx-build.log" -f docker/nginx.Containerfile "$WORK/empty" \
  || setup_failed "podman build nginx"
mkdir -p "$WORK/postgres"
cp docker/postgres-entrypoint.sh "$WORK/postgres/"
build "$POSTGRES_IMAGE_LOCAL" "$WORK/postgres-build.log" -f docker/postgres.Containerfile \
  "$WORK/postgres" || setup_failed "podman build postgres"
podman image prune -f --filter "label=$BUILD_LABEL" >/dev/null 2>&1 || true

# ---- 4. checks -------------------------------------------------------------------------------
log "running the checks"
set +e
"$PY" docker/container_test.py \
  --image "$IMAGE" --redis-image "$REDIS_IMAGE_LOCAL" --nginx-image "$NGINX_IMAGE_LOCAL" \
  --postgres-image "$POSTGRES_IMAGE_LOCAL" --run-id "$RUN_ID" \
  --podman-compose "$PODMAN_COMPOSE" --work "$WORK"
rc=$?
set -e
log "done in $(($(date +%s) - START))s"
exit "$rc"
