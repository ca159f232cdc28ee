#!/bin/sh
# The image's entrypoint: lifts Docker's masks on /proc, then runs callisto.
#
# Docker hides parts of /proc behind mounts (/proc/kcore, /proc/keys, ...; "systempaths").
# While they are there the kernel refuses any new proc mount, and bubblewrap mounts a fresh
# /proc for each sandboxed kernel. `docker run --security-opt systempaths=unconfined` leaves
# them out; docker-compose v1 cannot say so, so they are unmounted here. This needs
# CAP_SYS_ADMIN in the container, which the sandbox needs anyway (compose.yaml says why);
# without it the mounts stay and callisto's sandbox probe says what is missing.
awk '$5 ~ /^\/proc\// {print $5}' /proc/self/mountinfo | sort -r | while read -r path; do
    umount "$path" 2>/dev/null || true
done
exec /usr/local/bin/callisto "$@"
