# One namespace, service account and role binding per tenant. Removing a tenant
# from inputs prunes exactly its objects; the plan shows them leaving the inventory.
resource "stevedore_resourceset" "tenants" {
  name      = "tenants"
  namespace = "flux-system"

  inputs = [
    { tenant = "team-a", role = "admin" },
    { tenant = "team-b", role = "edit" },
  ]

  resources = [
    {
      apiVersion = "v1"
      kind       = "Namespace"
      metadata   = { name = "<< inputs.tenant >>" }
    },
    {
      apiVersion = "v1"
      kind       = "ServiceAccount"
      metadata   = { name = "flux", namespace = "<< inputs.tenant >>" }
    },
    {
      apiVersion = "rbac.authorization.k8s.io/v1"
      kind       = "RoleBinding"
      metadata   = { name = "flux", namespace = "<< inputs.tenant >>" }
      roleRef    = { apiGroup = "rbac.authorization.k8s.io", kind = "ClusterRole", name = "<< inputs.role >>" }
      subjects   = [{ kind = "ServiceAccount", name = "flux", namespace = "<< inputs.tenant >>" }]
    },
  ]

  common_metadata {
    labels = { "app.kubernetes.io/managed-by" = "stevedore" }
  }
}
