# Every Helm release stored in the namespace apps, with who made it and the
# import ID that adopts it.
data "stevedore_helmreleases" "apps" {
  namespace = "apps"
}

# Only the releases the helm CLI (or another Helm SDK client) made, labelled
# team=payments with `helm install --labels team=payments`.
data "stevedore_helmreleases" "payments" {
  owner          = "helm"
  label_selector = "team=payments"
}

output "releases" {
  value = {
    for key, r in data.stevedore_helmreleases.apps.releases :
    key => "${r.chart_name}@${r.chart_version} (${r.owner}, revision ${r.revision}): import ID ${r.import_id}"
  }
}
