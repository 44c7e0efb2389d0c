#!/bin/sh
# The base image of the serverless end-to-end test (issue 33 item 5): Debian with Python and what the client's own
# serverless worker imports (vast-cli's vastai/serverless/server: aiohttp, pycryptodome, psutil, anyio, distutils'
# strtobool; its SDK side: requests). No image registry and no PyPI are reachable here, so it is made from Debian's
# packages: `debootstrap --variant=minbase` from the machine's own apt mirror, then `docker import`, as sshd-image.sh.
#
# Trixie, not bookworm: the worker starts its server with `web.AppRunner(app, handler_cancellation=True)`, a keyword
# aiohttp has since 3.9; bookworm's python3-aiohttp is 3.8.4, whose request handler refuses it on every connection.
# Trixie's Python 3.13 has no distutils of its own: python3-setuptools' distutils-precedence.pth provides the
# `distutils.util.strtobool` the worker imports.
#
# The worker's code is not in this image: the test adds it (test/fixtures/vast-cli-serverless, unmodified) and its
# model backend in a layer of its own (test/helpers/serverless-image.ts), so this slow part is built once.
#
# Prints the image's reference on stdout (all else goes to stderr). The tag is this file's SHA-256: a changed recipe
# makes a new image, an unchanged one is built once per Docker daemon. A lock (flock on a file in /tmp) makes a second
# caller (another test file, or .ci/run's early background build) wait for the first, then find the image made. Any
# failure exits non-zero: the test that needs the image fails, never skips.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tag="gpuplane-test-serverless:$(sha256sum "$here/serverless-image.sh" | cut -c1-16)"

exec 9>"${TMPDIR:-/tmp}/gpuplane-test-serverless-image.lock"
flock 9
if docker image inspect "$tag" >/dev/null 2>&1; then
  echo "$tag"
  exit 0
fi
if ! command -v debootstrap >/dev/null 2>&1; then
  echo "serverless-image: debootstrap is not installed (apt-get install debootstrap; .ci/run does)" >&2
  exit 1
fi

# The Debian archive apt uses here (found as sshd-image.sh finds it, by its bookworm entry), else Debian's own.
mirror=$(awk '
  /^[[:space:]]*$/ { if (suites ~ /(^|[[:space:]])bookworm([[:space:]]|$)/ && uris != "" && !found) { print uris; found = 1 } suites = ""; uris = ""; next }
  /^URIs:/ { uris = $2 }
  /^Suites:/ { suites = $0; sub(/^Suites:/, "", suites); suites = suites " " }
  END { if (!found && suites ~ /(^|[[:space:]])bookworm([[:space:]]|$)/ && uris != "") print uris }
' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)
if [ -z "$mirror" ] && [ -f /etc/apt/sources.list ]; then
  mirror=$(awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' /etc/apt/sources.list)
fi
mirror=${mirror:-http://deb.debian.org/debian}

work=$(mktemp -d /var/tmp/gpuplane-serverless-image.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "serverless-image: building $tag from $mirror (debootstrap trixie, a few minutes)" >&2
timeout 1500 debootstrap --variant=minbase \
  --include=python3,python3-aiohttp,python3-requests,python3-pycryptodome,python3-psutil,python3-anyio,python3-setuptools \
  trixie "$work/root" "$mirror" >&2
rm -rf "$work"/root/var/cache/apt/archives/*.deb "$work"/root/var/lib/apt/lists/*
tar -C "$work/root" -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["/bin/bash"]' - "$tag" >&2
echo "$tag"
