# list.tfquery.hcl, beside the configuration that declares the provider.
# `terraform query -generate-config-out=generated.tf` writes a resource block
# and an import block (by identity) per set: a stevedore set's resources as it
# applied them, a flux-operator ResourceSet's spec with
# take_over_from = ["flux-operator"].

# The flux-operator ResourceSets of the namespace tenants.
list "stevedore_resourceset" "tenants" {
  provider = stevedore
  config {
    namespace = "tenants"
    owner     = "flux-operator"
  }
}
