#!/bin/sh
# The end-to-end tests' image with a real OpenSSH server, python3 and rsync (issue 31: SSH, scp, sftp and rsync into
# an image that brings its own sshd). No image registry is reachable here, so it is made from Debian's packages:
# `debootstrap --variant=minbase` of bookworm from the machine's own apt mirror, then `docker import`.
#
# Prints the image's reference on stdout (all else goes to stderr). The tag is this file's SHA-256, so a changed
# recipe makes a new image and an unchanged one is built once per Docker daemon. A lock (flock on a file in /tmp)
# makes a second caller (another test file, or .ci/run's early background build) wait for the first, then find the
# image made. Any failure exits non-zero: the tests that need the image fail, never skip.
#
# The host keys debootstrap's openssh-server made are removed: every container must make its own, as the agent's
# entrypoint does (src/agent/container-spec.ts keepAliveScript: ssh-keygen -A, /run/sshd, then sshd).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tag="gpuplane-test-sshd:$(sha256sum "$here/sshd-image.sh" | cut -c1-16)"

exec 9>"${TMPDIR:-/tmp}/gpuplane-test-sshd-image.lock"
flock 9
if docker image inspect "$tag" >/dev/null 2>&1; then
  echo "$tag"
  exit 0
fi
if ! command -v debootstrap >/dev/null 2>&1; then
  echo "sshd-image: debootstrap is not installed (apt-get install debootstrap; .ci/run does)" >&2
  exit 1
fi

# The mirror apt uses here: the first URIs of a deb822 stanza whose Suites has plain `bookworm`, else the
# one-line sources.list form, else Debian's own.
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

work=$(mktemp -d /var/tmp/gpuplane-sshd-image.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "sshd-image: building $tag from $mirror (debootstrap, about 2 minutes)" >&2
timeout 1200 debootstrap --variant=minbase --include=openssh-server,python3,rsync bookworm "$work/root" "$mirror" >&2
rm -f "$work"/root/etc/ssh/ssh_host_*
rm -rf "$work"/root/var/cache/apt/archives/*.deb "$work"/root/var/lib/apt/lists/*
tar -C "$work/root" -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["/bin/bash"]' - "$tag" >&2
echo "$tag"
