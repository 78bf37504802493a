# Terraform 1.12+ and OpenTofu 1.12+: an import block can name the set by its
# identity, the same namespace and name as the import ID <namespace>/<name>.
import {
  to = stevedore_resourceset.tenants
  identity = {
    namespace = "platform"
    name      = "tenants"
  }
}
