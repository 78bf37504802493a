#!/usr/bin/env bash
# Builds the pinned tool binaries into ./bin.
#
# Each directory under tools/ is its own Go module, so that the dependency graphs of
# Kubernetes, OpenTofu, Terraform, etcd and kwok never have to agree with each other.
# A module is built once per machine: its binaries are kept in a cache keyed by the
# module's go.mod and go.sum and copied into ./bin, so a fresh clone on the same
# machine (a CI run) copies them instead of building again, and a second `make tools`
# is a no-op.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN_DIR:-$root/bin}
cache=${STEVEDORE_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stevedore-tools}
mkdir -p "$bin" "$cache"

kube_version=v1.34.4
# kube-apiserver reports this version on /version; without it Helm would see
# v0.0.0 and refuse charts with a kubeVersion constraint, and kwokctl would pick
# flags for the wrong release.
kube_ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$kube_version \
 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=34 \
 -X k8s.io/component-base/version.gitTreeState=clean \
 -X k8s.io/client-go/pkg/version.gitVersion=$kube_version \
 -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=34"

# build MODULE LDFLAGS NAME=PACKAGE...
build() {
	local module=$1 ldflags=$2
	shift 2
	local dir=$root/tools/$module
	local key
	key=$(cat "$dir/go.mod" "$dir/go.sum" "$0" | sha256sum | cut -c1-16)
	local stamp=$bin/.$module.stamp
	local names=() pkgs=() spec
	for spec in "$@"; do names+=("${spec%%=*}"); pkgs+=("${spec#*=}"); done

	local fresh=1 name
	for name in "${names[@]}"; do [ -x "$bin/$name" ] || fresh=0; done
	if [ "$fresh" = 1 ] && [ "$(cat "$stamp" 2>/dev/null)" = "$key" ]; then
		return 0
	fi

	local store=$cache/$module-$key
	if [ ! -f "$store/.complete" ]; then
		echo "tools: building $module (${names[*]})" >&2
		local tmp=$store.tmp.$$
		rm -rf "$tmp"
		mkdir -p "$tmp"
		local i
		for i in "${!names[@]}"; do
			(cd "$dir" && go build -ldflags "$ldflags" -o "$tmp/${names[$i]}" "${pkgs[$i]}")
		done
		touch "$tmp/.complete"
		rm -rf "$store"
		mv "$tmp" "$store"
	fi
	for name in "${names[@]}"; do
		cp -f "$store/$name" "$bin/$name.tmp.$$"
		mv -f "$bin/$name.tmp.$$" "$bin/$name"
	done
	echo "$key" >"$stamp"
}

only=${1:-all}
want() { [ "$only" = all ] || [ "$only" = "$1" ]; }

want kwok && build kwok "-s -w" kwok=sigs.k8s.io/kwok/cmd/kwok kwokctl=sigs.k8s.io/kwok/cmd/kwokctl
want etcd && build etcd "-s -w" etcd=.
want kube && build kube "$kube_ldflags" \
	kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver \
	kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager \
	kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler \
	kubectl=k8s.io/kubernetes/cmd/kubectl
want terraform && build terraform "-s -w" terraform=github.com/hashicorp/terraform
want tofu && build tofu "-s -w -X github.com/opentofu/opentofu/version.dev=no" tofu=github.com/opentofu/opentofu/cmd/tofu
want docs && build docs "-s -w" tfplugindocs=github.com/hashicorp/terraform-plugin-docs/cmd/tfplugindocs
# The Helm CLIs the tests make releases "from outside" with, as users of Helm 3 and 4 do.
want helm3 && build helm3 "-s -w -X helm.sh/helm/v3/internal/version.version=v3.22.0" helm3=helm.sh/helm/v3/cmd/helm
want helm4 && build helm4 "-s -w -X helm.sh/helm/v4/internal/version.version=v4.3.1" helm4=helm.sh/helm/v4/cmd/helm
exit 0
