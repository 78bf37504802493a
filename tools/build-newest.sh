#!/usr/bin/env bash
# Builds the newest Terraform the acceptance tests run under (tools/terraform-newest)
# into ./bin/terraform-newest. It is not in tools/build.sh because that script's
# cache key hashes the script itself: a line added there would rebuild every
# other tool once on every machine. Go's build cache keeps the compiled
# packages, and a stamp of the module's go.mod and go.sum makes a second run a
# no-op, as tools/build.sh does.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN_DIR:-$root/bin}
dir=$root/tools/terraform-newest
mkdir -p "$bin"
key=$(cat "$dir/go.mod" "$dir/go.sum" | sha256sum | cut -c1-16)
stamp=$bin/.terraform-newest.stamp
if [ -x "$bin/terraform-newest" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$key" ]; then
	exit 0
fi
echo "tools: building terraform-newest" >&2
# version.dev=no: a release build prints 1.8.5, not 1.8.5-dev.
(cd "$dir" && go build -ldflags "-s -w -X github.com/hashicorp/terraform/version.dev=no" \
	-o "$bin/terraform-newest.tmp.$$" github.com/hashicorp/terraform)
mv -f "$bin/terraform-newest.tmp.$$" "$bin/terraform-newest"
echo "$key" >"$stamp"
