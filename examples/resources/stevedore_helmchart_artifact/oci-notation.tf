# A chart from an OCI registry, verified with Notation, as a Flux HelmChart with
# spec.verify.provider: notation. The trust policy and the CA certificates are
# the keys of the Secret Flux reads (trustpolicy.json, *.crt, *.pem), here
# held in the configuration: inline, or from files.
resource "stevedore_helmchart_artifact" "app" {
  repository = "oci://registry.example.com/charts"
  chart      = "app"
  version    = "2.x"

  verify {
    provider = "notation"
    trust_policy_json = jsonencode({
      version = "1.0"
      trustPolicies = [{
        name                  = "charts"
        registryScopes        = ["registry.example.com/charts/app"]
        signatureVerification = { level = "strict" }
        trustStores           = ["ca:release-signing"]
        trustedIdentities     = ["x509.subject: C=US, ST=WA, L=Seattle, O=Example, CN=release-signer"]
      }]
    })
    ca_certificates = {
      "ca.crt" = file("${path.module}/release-signing-ca.crt")
    }
  }
}

# The same material read from the Secret a Flux HelmChart names in
# spec.verify.secretRef (hashicorp/kubernetes): trustpolicy.json, and every
# key ending in .crt or .pem as the CA certificates.
data "kubernetes_secret_v1" "notation" {
  metadata {
    name      = "notation-config"
    namespace = "flux-system"
  }
}

resource "stevedore_helmchart_artifact" "app_from_secret" {
  repository = "oci://registry.example.com/charts"
  chart      = "app"
  version    = "2.x"

  verify {
    provider          = "notation"
    trust_policy_json = data.kubernetes_secret_v1.notation.data["trustpolicy.json"]
    ca_certificates = {
      for key, value in data.kubernetes_secret_v1.notation.data : key => value
      if endswith(key, ".crt") || endswith(key, ".pem")
    }
  }
}
