# A chart from a directory of this repository. Dependencies missing from
# charts/ are built into it as `helm dependency build` does: file:// ones from
# their directory, https:// and oci:// ones fetched with the provider's
# registries credentials. With the Revision strategy a
# change to the sources (a new git commit, or changed files outside git) gives
# a new artifact: revision is "<version>+<first 12 characters of the source
# revision>".
resource "stevedore_helmchart_artifact" "platform" {
  source_path        = "${path.module}/charts/platform"
  reconcile_strategy = "Revision"
  values_files       = ["values.yaml", "values-prod.yaml"]
}

output "platform_chart" {
  value = {
    path     = stevedore_helmchart_artifact.platform.path
    revision = stevedore_helmchart_artifact.platform.revision
    source   = stevedore_helmchart_artifact.platform.source_revision
  }
}
