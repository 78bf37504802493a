#!/usr/bin/env bash
# Builds the newest Terraform the acceptance tests run under into
# ./bin/terraform-newest, from Terraform's git source at the tag below.
#
# Terraform from 1.9 on cannot be built from the Go module proxy: its go.mod
# replaces modules nested in its own repository (internal/backend/remote-state/*,
# internal/legacy) by local paths, which only a checkout of the tag has. So the
# source is a git directory holding the tag:
#   - $TERRAFORM_GIT, a git directory (a clone or a bare mirror) that has the
#     tag, for machines without internet that hold a copy of the repository;
#   - else a shallow clone of the tag from GitHub.
# Terraform's own dependencies come through the Go module proxy (GOPROXY) as
# usual. The tag's go.mod asks for go 1.25.10; make exports GOTOOLCHAIN.
#
# The binary is built once per machine: it is kept in the tools cache
# (${STEVEDORE_TOOLS_CACHE:-${XDG_CACHE_HOME:-~/.cache}/stevedore-tools}),
# keyed by the tag, the build flags and the Go toolchain, and copied into ./bin,
# as tools/build.sh does for the other tools; a fresh clone on the same machine
# (a CI run) copies it and needs no source. A cold build takes about 10 minutes
# on 2 cores. Not in tools/build.sh, whose cache key hashes that script: a line
# added there would rebuild every other tool once on every machine.
set -euo pipefail

# The newest stable Terraform tag that builds here. Raise it when a newer one
# does (and say so in CONTRIBUTING.md's CLI versions).
version=v1.15.9

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN_DIR:-$root/bin}
cache=${STEVEDORE_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stevedore-tools}
mkdir -p "$bin" "$cache"

# version.dev=no: a release build prints 1.15.9, not 1.15.9-dev.
ldflags="-s -w -X github.com/hashicorp/terraform/version.dev=no"
toolchain=$(go env GOVERSION)
key=$(printf '%s\n' "$version" "$ldflags" "$toolchain" | sha256sum | cut -c1-16)
stamp=$bin/.terraform-newest.stamp
if [ -x "$bin/terraform-newest" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$key" ]; then
	exit 0
fi

store=$cache/terraform-$version-$key
if [ ! -f "$store/.complete" ]; then
	echo "tools: building terraform-newest (Terraform $version from its git source)" >&2
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	git_dir=${TERRAFORM_GIT:-}
	if [ -z "$git_dir" ]; then
		git clone --quiet --bare --depth 1 --branch "$version" \
			https://github.com/hashicorp/terraform "$work/git" >&2
		git_dir=$work/git
	fi
	if ! git --git-dir="$git_dir" rev-parse -q --verify "refs/tags/$version^{commit}" >/dev/null; then
		echo "tools: $git_dir (TERRAFORM_GIT) has no tag $version" >&2
		exit 1
	fi
	mkdir "$work/src"
	git --git-dir="$git_dir" archive "$version" | tar -x -C "$work/src"
	tmp=$store.tmp.$$
	rm -rf "$tmp"
	mkdir -p "$tmp"
	(cd "$work/src" && go build -buildvcs=false -trimpath -ldflags "$ldflags" -o "$tmp/terraform" .) >&2
	touch "$tmp/.complete"
	rm -rf "$store"
	mv "$tmp" "$store"
fi
cp -f "$store/terraform" "$bin/terraform-newest.tmp.$$"
mv -f "$bin/terraform-newest.tmp.$$" "$bin/terraform-newest"
echo "$key" >"$stamp"
