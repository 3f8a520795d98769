#!/bin/sh
# Offline check of the Kubernetes manifests (ctest lint.k8s_manifests, when
# kubectl is installed): every *.yaml here parses and builds as Kubernetes
# objects with `kubectl kustomize` (no cluster needed; it checks YAML syntax,
# apiVersion/kind/metadata, not the API schema), the objects the docs name
# are there, and the TLS files the pods pass to vmm are the Secret's keys.
# usage: check.sh [KUBECTL]
set -eu
kubectl=${1:-kubectl}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}

{
	echo "apiVersion: kustomize.config.k8s.io/v1beta1"
	echo "kind: Kustomization"
	echo "resources:"
	for f in "$here"/*.yaml; do
		[ "$(basename "$f")" = kustomization.yaml ] && continue
		cp "$f" "$tmp/"
		echo "  - $(basename "$f")"
	done
} >"$tmp/kustomization.yaml"
"$kubectl" kustomize "$tmp" >"$tmp/all.out" 2>"$tmp/err" || fail "kubectl kustomize: $(cat "$tmp/err")"
"$kubectl" kustomize "$here" >/dev/null 2>"$tmp/err" || fail "kustomization.yaml: $(cat "$tmp/err")"

for want in "kind: Namespace" "kind: DaemonSet" "kind: Pod" "kind: Secret" "name: vmm-host" \
	"name: vm-dirty" "name: vmm-tls" "hostPort: 7000" "path: /dev/kvm" "path: /dev/userfaultfd" \
	"path: /run/vmm"; do
	grep -q -- "$want" "$tmp/all.out" || fail "no '$want' in the manifests"
done
# [migration] tls_* keys (docs/config.md) name files of the vmm-tls Secret.
for key in tls.pem tls.key ca.pem; do
	grep -q -- "^  $key: |" "$here/tls-secret.example.yaml" || fail "the Secret example has no $key"
done
for arg in migration.tls_cert=/etc/vmm/tls/tls.pem migration.tls_key=/etc/vmm/tls/tls.key \
	migration.tls_ca=/etc/vmm/tls/ca.pem; do
	[ "$(grep -c -- "- $arg\$" "$tmp/all.out")" -ge 2 ] || fail "'$arg' missing from the vmm containers"
done
echo PASS
