# A chart from an OCI registry, verified with cosign. Any one of the public
# keys may have signed it (key rotation); nothing is stored when none did.
resource "stevedore_helmchart_artifact" "podinfo_oci" {
  repository = "oci://ghcr.io/stefanprodan/charts"
  chart      = "podinfo"
  version    = "6.x"

  verify {
    provider = "cosign"
    public_keys = [
      file("${path.module}/cosign-2025.pub"),
      file("${path.module}/cosign-2026.pub"),
    ]
  }
}

# Keyless: the signing certificate, issued by Fulcio and logged in Rekor, must
# match one of the identities (Go regular expressions).
resource "stevedore_helmchart_artifact" "podinfo_keyless" {
  repository = "oci://ghcr.io/stefanprodan/charts"
  chart      = "podinfo"
  version    = "6.x"

  verify {
    provider = "cosign"
    match_oidc_identity = [{
      issuer  = "^https://token\\.actions\\.githubusercontent\\.com$"
      subject = "^https://github\\.com/stefanprodan/podinfo.*$"
    }]
  }
}
