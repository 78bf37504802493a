#!/usr/bin/env bash
# Builds the hashicorp/helm Terraform provider v3.1.2 into a directory ($1,
# default bin/helm-provider under the repository root) as
# terraform-provider-helm, for a dev_overrides entry of "hashicorp/helm", and
# prints the directory. BenchmarkTofuPlanVersusHelmProvider
# and BenchmarkTofuInstall30 (internal/provider/) read it from
# STEVEDORE_HELM_PROVIDER_DIR; `make tools` builds it into the tools cache
# (below), which TestAccHelmRelease_movedFromHelmRelease reads.
#
# `go install github.com/hashicorp/terraform-provider-helm/v3@v3.1.2` cannot
# work: the module path in the tag's go.mod has no /v3 suffix, so the module
# proxy serves no v3.x version of it under either path. The source comes from
# git instead: $HELM_PROVIDER_GIT, a git directory holding the tag (a clone or
# a bare mirror, for machines without internet that hold a copy of the
# repository); or else a shallow clone of the tag from GitHub. Its dependencies come through the Go module
# proxy (GOPROXY) as usual. The tag's go.mod asks for go 1.25.8; with an older
# local Go, set GOTOOLCHAIN (e.g. GOTOOLCHAIN=go1.27.3) for this script.
#
# A directory that already holds a binary this script built of the same tag
# (the stamp file .version says which) is kept as it is: the acceptance test
# TestAccHelmRelease_movedFromHelmRelease calls this script on every run with
# a cache directory, ${XDG_CACHE_HOME:-~/.cache}/stevedore-tools/helm-provider-<tag>,
# and only its first run builds.
set -euo pipefail

version=v3.1.2
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/bin/helm-provider}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ -x "$out/terraform-provider-helm" ] && [ "$(cat "$out/.version" 2>/dev/null)" = "$version" ]; then
	echo "$out"
	exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

git_dir=${HELM_PROVIDER_GIT:-}
if [ -z "$git_dir" ]; then
	git clone --quiet --bare --depth 1 --branch "$version" \
		https://github.com/hashicorp/terraform-provider-helm "$work/git" >&2
	git_dir=$work/git
fi

mkdir "$work/src"
git --git-dir="$git_dir" archive "$version" | tar -x -C "$work/src"
(
	cd "$work/src"
	go build -buildvcs=false -trimpath -ldflags "-s -w -X main.Version=${version#v}" \
		-o "$out/terraform-provider-helm" .
) >&2
echo "$version" >"$out/.version"
echo "$out"
