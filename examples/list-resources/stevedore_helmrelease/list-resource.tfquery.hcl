# list.tfquery.hcl, beside the configuration that declares the provider.
# `terraform query` lists; `terraform query -generate-config-out=generated.tf`
# writes a resource block and an import block (by identity) per release.

# Every release the helm CLI made in the namespace apps.
list "stevedore_helmrelease" "apps" {
  provider = stevedore
  config {
    namespace = "apps"
    owner     = "helm"
  }
}

# Releases with a label given at `helm install --labels team=payments`, in
# every namespace the provider may list.
list "stevedore_helmrelease" "payments" {
  provider = stevedore
  config {
    label_selector = "team=payments"
  }
}
