#!/bin/sh
# The image's HEALTHCHECK: every VM of this container answers on its API
# socket (`vmm migrate --status` asks GET /api/v1/vm/migrate). A target
# waiting for its VM (`vmm run --incoming`) serves its API too, at
# <name>.sock.incoming; in the moment before it listens it is healthy while
# its process lives. Anything else is unhealthy.
set -u
dir=${VMM_RUN_DIR:-/run/vmm}
found=0
for s in "$dir"/*.sock "$dir"/*.sock.incoming; do
	[ -S "$s" ] || continue
	found=1
	vmm migrate --status --api-socket "$s" >/dev/null || {
		echo "vmm healthcheck: no answer on $s"
		exit 1
	}
done
[ "$found" = 1 ] && exit 0
if tr '\0' ' ' </proc/1/cmdline | grep -q -- '--incoming'; then
	exit 0
fi
echo "vmm healthcheck: no API socket in $dir"
exit 1
