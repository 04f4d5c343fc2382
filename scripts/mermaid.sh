#!/usr/bin/env bash
# Ship the Mermaid script with the site: the architecture diagrams are Mermaid, which the
# Material theme loads from a CDN at view time unless the page already has it, so a reader
# offline (or behind a proxy) would see the diagrams' source. The pinned release is fetched
# once from the npm registry (npm checks its integrity) into a cache outside the repository,
# and copied into the built site, where mkdocs.yml's extra_javascript names it.
#
#   scripts/mermaid.sh SITE_DIR
#
# MERMAID_CACHE overrides the cache folder. Without npm or the registry the site is still
# built, and says so: its diagrams then load from the CDN as before.
set -euo pipefail

VERSION=11.9.0  # Material's bundle asks for mermaid@11
SITE=${1:?usage: scripts/mermaid.sh SITE_DIR}
CACHE=${MERMAID_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/handler-kit/mermaid-$VERSION}
SCRIPT=$CACHE/mermaid.min.js

if [ ! -s "$SCRIPT" ]; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    if ! (cd "$work" && npm pack --silent "mermaid@$VERSION" >/dev/null \
            && tar -xzf "mermaid-$VERSION.tgz" package/dist/mermaid.min.js); then
        echo "scripts/mermaid.sh: could not fetch mermaid@$VERSION with npm: the site's" \
            "diagrams will load from the CDN" >&2
        exit 0
    fi
    mkdir -p "$CACHE"
    mv "$work/package/dist/mermaid.min.js" "$SCRIPT.tmp"
    mv "$SCRIPT.tmp" "$SCRIPT"
fi
mkdir -p "$SITE/javascripts"
cp "$SCRIPT" "$SITE/javascripts/mermaid.min.js"
