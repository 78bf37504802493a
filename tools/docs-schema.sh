#!/usr/bin/env bash
# make docs: the provider's schema as `providers schema -json` prints it, for
# tfplugindocs --providers-schema. tfplugindocs would otherwise run the
# `terraform` on PATH, which is Terraform 1.5.7 (bin/terraform): it prints no
# resource identity schemas (Terraform 1.12+), so the docs would have none and
# tfplugindocs would refuse the import-by-identity.tf examples. The newest
# Terraform (bin/terraform-newest, `make tools`) prints the identities and the
# list resource schemas (Terraform 1.14+, `terraform query`), which OpenTofu
# (1.12.6), having no list resources, leaves out; so the docs of the list
# resources come from it.
#
# Usage: tools/docs-schema.sh <output file>
set -euo pipefail
out=$1
cd "$(dirname "$0")/.."
cli=${DOCS_SCHEMA_CLI:-$PWD/bin/terraform-newest}
if [ ! -x "$cli" ]; then
	echo "docs-schema: $cli not found: run make tools" >&2
	exit 1
fi
# A CLI configuration file that does not exist makes the CLI print a warning
# into the JSON: no configuration is what this means.
if [ -n "${TF_CLI_CONFIG_FILE:-}" ] && [ ! -f "$TF_CLI_CONFIG_FILE" ]; then
	unset TF_CLI_CONFIG_FILE
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
plugin="$work/plugins/registry.terraform.io/hashicorp/stevedore/0.0.1/$(go env GOOS)_$(go env GOARCH)"
mkdir -p "$plugin"
go build -o "$plugin/terraform-provider-stevedore" .
cat >"$work/main.tf" <<'TF'
terraform {
  required_providers {
    stevedore = { source = "registry.terraform.io/hashicorp/stevedore" }
  }
}
TF
(cd "$work" && CHECKPOINT_DISABLE=1 "$cli" init -input=false -plugin-dir=./plugins >/dev/null && CHECKPOINT_DISABLE=1 "$cli" providers schema -json) >"$out"
