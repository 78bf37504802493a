#!/usr/bin/env bash
# make docs: the provider's schema as `providers schema -json` prints it, for
# tfplugindocs --providers-schema. tfplugindocs would otherwise run the
# `terraform` on PATH, which is Terraform 1.5.7 (bin/terraform): it prints no
# resource identity schemas (Terraform 1.12+), so the docs would have none and
# tfplugindocs would refuse the import-by-identity.tf examples. OpenTofu
# 1.12.6 (bin/tofu) prints them, under the address tfplugindocs looks for.
#
# Usage: tools/docs-schema.sh <output file>
set -euo pipefail
out=$1
cd "$(dirname "$0")/.."
# A CLI configuration file that does not exist makes tofu print a warning
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
(cd "$work" && tofu init -input=false -plugin-dir=./plugins >/dev/null && tofu providers schema -json) >"$out"
