# Let the CLI write the resource blocks of every release of the namespace
# apps. `plan -generate-config-out` takes no import block with for_each, so
# the listing writes one import block per release:
#
#   terraform apply                                   # reads the listing
#   terraform output -raw import_blocks > imports.tf
#   terraform plan -generate-config-out=generated.tf  # review generated.tf
#   terraform apply                                   # no new Helm revision
data "stevedore_helmreleases" "apps" {
  namespace = "apps"
}

output "import_blocks" {
  value = join("", [for key, r in data.stevedore_helmreleases.apps.releases : <<-EOT
    import {
      to = stevedore_helmrelease.${replace(key, "/[^0-9A-Za-z_]/", "_")}
      id = "${r.import_id}"
    }
    EOT
  ])
}
