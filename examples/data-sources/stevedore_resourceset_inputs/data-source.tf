# Preview environments from OCI tags: every 1.x tag of the app's artifact
# repository becomes a set of objects. Pushing a new tag shows, at the next
# plan, as the objects of one more preview to create.
data "stevedore_resourceset_inputs" "app_tags" {
  type = "OCIArtifactTag"
  url  = "oci://ghcr.io/example/app/manifests"

  filter {
    semver = ">=1.0.0-0"
    limit  = 5
  }

  default_values = {
    domain = "preview.example.com"
  }
}

resource "stevedore_resourceset" "previews" {
  name      = "app-previews"
  namespace = "flux-system"

  inputs = data.stevedore_resourceset_inputs.app_tags.inputs

  resources_template = <<-EOT
    apiVersion: v1
    kind: Namespace
    metadata:
      name: app-preview-<< inputs.id >>
    ---
    apiVersion: source.toolkit.fluxcd.io/v1
    kind: OCIRepository
    metadata:
      name: app
      namespace: app-preview-<< inputs.id >>
    spec:
      interval: 10m
      url: oci://ghcr.io/example/app/manifests
      ref:
        digest: "<< inputs.digest >>"
    ---
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: preview
      namespace: app-preview-<< inputs.id >>
    data:
      tag: "<< inputs.tag >>"
      host: "<< inputs.tag | slugify >>.<< inputs.domain >>"
  EOT
}
