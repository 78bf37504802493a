package provider

import "testing"

func TestRegistryForLongestPrefix(t *testing.T) {
	list := []registryCredential{
		{URL: "oci://ghcr.io", Username: "org"},
		{URL: "oci://ghcr.io/team/", Username: "team"},
		{URL: "https://charts.example.com", Username: "http"},
	}
	for repo, want := range map[string]string{
		"oci://ghcr.io/other/charts":       "org",
		"oci://ghcr.io/team/charts":        "team",
		"oci://ghcr.io/team":               "team",
		"oci://ghcr.io/teammates/charts":   "org",
		"https://charts.example.com":       "http",
		"https://charts.example.com/sub":   "http",
		"https://charts.example.community": "",
		"oci://registry.example.com/x":     "",
	} {
		c, ok := registryFor(list, repo)
		if got := c.Username; got != want || ok != (want != "") {
			t.Errorf("%s: got %q (%v), want %q", repo, got, ok, want)
		}
	}
}
