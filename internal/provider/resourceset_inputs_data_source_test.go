package provider

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/inputs"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/inputs/inputstest"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// inputsAccTest runs a case of the data source under every CLI. The data
// source needs no cluster (its upstreams are in-process fakes and registries),
// so, like the artifact's cases, these run with and without TF_ACC.
func inputsAccTest(t *testing.T, tc resource.TestCase) {
	t.Helper()
	underCLIs(t, nil, tc, true, func(t *testing.T, tc resource.TestCase) { resource.UnitTest(t, tc) })
}

// inputsConfig is a provider without a cluster and the given blocks, plus a
// terraform_data that holds every data source's inputs: its empty plan after
// each apply proves the inputs stable from one read to the next.
func inputsConfig(blocks string, sources ...string) string {
	var refs []string
	for _, s := range sources {
		refs = append(refs, "data.stevedore_resourceset_inputs."+s+".inputs")
	}
	return fmt.Sprintf(`
provider "stevedore" {}
%s
resource "terraform_data" "inputs" {
  input = [%s]
}
`, blocks, strings.Join(refs, ", "))
}

func q(s string) string { return strconv.Quote(s) }

// expectInputs checks the inputs of data source name, in order.
func expectInputs(name string, want ...map[string]string) statecheck.StateCheck {
	return statecheck.ExpectKnownValue("data.stevedore_resourceset_inputs."+name, tfjsonpath.New("inputs"), inputsCheck(want))
}

// lazy is a check built when it runs, from what the test pushed by then.
type lazy func() knownvalue.Check

func (l lazy) CheckValue(v any) error { return l().CheckValue(v) }
func (l lazy) String() string         { return l().String() }

func inputsCheck(want []map[string]string) knownvalue.Check {
	list := make([]knownvalue.Check, 0, len(want))
	for _, w := range want {
		obj := map[string]knownvalue.Check{}
		for k, v := range w {
			if k == "labels" {
				var ls []knownvalue.Check
				for _, l := range strings.Split(v, ",") {
					ls = append(ls, knownvalue.StringExact(l))
				}
				obj[k] = knownvalue.ListExact(ls)
				continue
			}
			obj[k] = knownvalue.StringExact(v)
		}
		list = append(list, knownvalue.ObjectExact(obj))
	}
	return knownvalue.ListExact(list)
}

// Static: one input of the default values (numbers and lists included) and
// the checksum of `uid`; concat() with literal inputs gives the union that
// feeds stevedore_resourceset.inputs.
func TestAccResourceSetInputs_static(t *testing.T) {
	t.Parallel()
	config := inputsConfig(`
data "stevedore_resourceset_inputs" "static" {
  type           = "Static"
  uid            = "0b6bc3e5-1f1c-4f36-9a3b-3f6e0f0f2d4c"
  default_values = { env = "staging", replicas = 2, tenants = ["a", "b"] }
}

output "all" {
  value = concat(data.stevedore_resourceset_inputs.static.inputs, [{ id = "lit", env = "dev" }])
}
`, "static")
	inputsAccTest(t, resource.TestCase{Steps: []resource.TestStep{{
		Config: config,
		ConfigStateChecks: []statecheck.StateCheck{
			statecheck.ExpectKnownValue("data.stevedore_resourceset_inputs.static", tfjsonpath.New("inputs"), knownvalue.ListExact([]knownvalue.Check{
				knownvalue.ObjectExact(map[string]knownvalue.Check{
					"id":       knownvalue.StringExact(inputs.ID("0b6bc3e5-1f1c-4f36-9a3b-3f6e0f0f2d4c")),
					"env":      knownvalue.StringExact("staging"),
					"replicas": knownvalue.Int64Exact(2),
					"tenants":  knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("a"), knownvalue.StringExact("b")}),
				}),
			})),
			statecheck.ExpectKnownValue("data.stevedore_resourceset_inputs.static", tfjsonpath.New("id"), knownvalue.StringRegexp(regexp.MustCompile(`^sha256:[0-9a-f]{64}$`))),
			statecheck.ExpectKnownOutputValueAtPath("all", tfjsonpath.New(1).AtMapKey("id"), knownvalue.StringExact("lit")),
			statecheck.ExpectKnownOutputValue("all", knownvalue.ListSizeExact(2)),
		},
	}}})
}

// Every bad field is a diagnostic that names it.
func TestAccResourceSetInputs_invalid(t *testing.T) {
	t.Parallel()
	step := func(body, want string) resource.TestStep {
		return resource.TestStep{
			Config:   "provider \"stevedore\" {}\ndata \"stevedore_resourceset_inputs\" \"x\" {\n" + body + "\n}\n",
			PlanOnly: true,
			// The CLIs wrap long messages: any space may be a line break.
			ExpectError: regexp.MustCompile(strings.ReplaceAll(want, " ", `\s+`)),
		}
	}
	inputsAccTest(t, resource.TestCase{Steps: []resource.TestStep{
		step(`type = "GiteaTag"
url = "https://gitea.example/o/r"`, `(?s)type.*"GiteaTag" is a flux-operator type stevedore does not support yet`),
		step(`type = "Nope"`, `unknown type "Nope"`),
		step(`type = "GitHubPullRequest"`, `url: required when type is GitHubPullRequest`),
		step(`type = "Static"
url = "https://example.com"`, `url: must not be set when type is Static`),
		step(`type = "OCIArtifactTag"
url  = "oci://registry.example/app"
filter {
  semver = ">=foo"
}`, `filter.semver: invalid semver constraint`),
		step(`type = "GitHubBranch"
url  = "https://github.com/o/r"
filter {
  include_branch = "("
}`, `filter.include_branch: invalid regular expression`),
		step(`type = "GitHubBranch"
url  = "https://github.com/o/r"
filter {
  limit = 0
}`, `filter.limit must be between 1 and 10000, got 0`),
		step(`type = "OCIArtifactTag"
url  = "oci://registry.example/app"
username = "u"`, `password: required with username`),
		step(`type = "Static"
default_values = ["a"]`, `(?s)default_values.*must be an object`),
	}})
}

func pushImage(t *testing.T, ref string, auth authn.Authenticator) string {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img, remote.WithAuth(auth)); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// ociTags is the tags a test pushed to one repository, oldest first: a
// version newer than every other each time, so that a case that runs under
// both CLIs against the same registry sees a new tag in each run.
type ociTags struct {
	t       *testing.T
	repo    string
	auth    authn.Authenticator
	mu      sync.Mutex
	tags    []string
	digests map[string]string
}

func (o *ociTags) push(tag string) {
	d := pushImage(o.t, o.repo+":"+tag, o.auth)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.digests == nil {
		o.digests = map[string]string{}
	}
	o.tags, o.digests[tag] = append(o.tags, tag), d
}

// pushNext pushes 1.<n>.0, n one more than last time.
func (o *ociTags) pushNext() string {
	o.mu.Lock()
	tag := fmt.Sprintf("1.%d.0", len(o.tags))
	o.mu.Unlock()
	o.push(tag)
	return tag
}

// newest is the last n semver tags pushed, newest first.
func (o *ociTags) newest(n int) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for i := len(o.tags) - 1; i >= 0 && len(out) < n; i-- {
		if strings.HasPrefix(o.tags[i], "1.") {
			out = append(out, o.tags[i])
		}
	}
	return out
}

func (o *ociTags) digest(tag string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.digests[tag]
}

// OCIArtifactTag against the in-process registry, with credentials: the
// latest semver tags first, and a tag pushed between two plans shows in the
// second.
func TestAccResourceSetInputs_ociArtifactTag(t *testing.T) {
	t.Parallel()
	reg, err := testenv.StartOCIRegistry(testenv.OCIRegistryOptions{Username: "oci-user", Password: "oci-pass"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	o := &ociTags{t: t, repo: reg.Host() + "/" + testenv.UniqueName(t, "app"), auth: &authn.Basic{Username: "oci-user", Password: "oci-pass"}}
	// Not semver, or excluded by the constraint.
	o.push("latest")
	o.push("2.0.0-rc.1")
	o.pushNext()
	o.pushNext()
	newest := statecheck.ExpectKnownValue("data.stevedore_resourceset_inputs.oci", tfjsonpath.New("inputs"), lazy(func() knownvalue.Check {
		var want []map[string]string
		for _, tag := range o.newest(2) {
			want = append(want, map[string]string{"id": inputs.ID(tag), "tag": tag, "digest": o.digest(tag), "env": "preview"})
		}
		return inputsCheck(want)
	}))
	config := inputsConfig(fmt.Sprintf(`
data "stevedore_resourceset_inputs" "oci" {
  type     = "OCIArtifactTag"
  url      = %s
  insecure = true
  username = "oci-user"
  password = "oci-pass"
  filter {
    semver = ">=1.0.0"
    limit  = 2
  }
  default_values = { env = "preview" }
}
`, q("oci://"+o.repo)), "oci")
	inputsAccTest(t, resource.TestCase{Steps: []resource.TestStep{
		{
			Config:            config,
			ConfigStateChecks: []statecheck.StateCheck{newest},
		},
		{
			PreConfig: func() { o.pushNext() },
			Config:    config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction("terraform_data.inputs", plancheck.ResourceActionUpdate),
			}},
			ConfigStateChecks: []statecheck.StateCheck{newest},
		},
		{
			Config:   strings.Replace(config, `password = "oci-pass"`, `password = "wrong"`, 1),
			PlanOnly: true, ExpectError: regexp.MustCompile(`(?s)Cannot read the inputs.*(UNAUTHORIZED|401|authentication required)`),
		},
	}})
}

// A url known only at apply: validation waits for it, and Terraform reads the
// data source during the apply.
func TestAccResourceSetInputs_unknownUntilApply(t *testing.T) {
	t.Parallel()
	reg, err := testenv.StartOCIRegistry(testenv.OCIRegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	o := &ociTags{t: t, repo: reg.Host() + "/" + testenv.UniqueName(t, "app"), auth: authn.Anonymous}
	o.pushNext()
	config := inputsConfig(fmt.Sprintf(`
resource "terraform_data" "repo" {
  input = %s
}

data "stevedore_resourceset_inputs" "oci" {
  type     = "OCIArtifactTag"
  url      = "oci://${terraform_data.repo.output}"
  insecure = true
}
`, q(o.repo)), "oci")
	inputsAccTest(t, resource.TestCase{Steps: []resource.TestStep{{
		Config: config,
		ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
			plancheck.ExpectUnknownValue("terraform_data.inputs", tfjsonpath.New("input").AtSliceIndex(0)),
		}},
		ConfigStateChecks: []statecheck.StateCheck{
			expectInputs("oci", map[string]string{"id": inputs.ID("1.0.0"), "tag": "1.0.0", "digest": o.digest("1.0.0")}),
		},
	}}})
}

var (
	accRequests = []inputstest.ChangeRequest{
		{Number: 1, Title: "Old", Author: "ann", Branch: "feat/old", SHA: "a1", Closed: true},
		{Number: 2, Title: "Add UI", Author: "bob", Branch: "feat/ui", SHA: "b2", Labels: []string{"deploy/preview"}},
		{Number: 3, Title: "Fix", Author: "cy", Branch: "fix/x", SHA: "c3", Labels: []string{"deploy/preview", "pause"}},
		{Number: 4, Title: "Docs", Author: "dee", Branch: "docs", SHA: "d4"},
	}
	accBranches = []inputstest.Ref{{Name: "main", SHA: "m1"}, {Name: "feat/a", SHA: "f1"}, {Name: "wip/b", SHA: "w1"}}
	accTags     = []inputstest.Ref{{Name: "v1.0.0", SHA: "t1"}, {Name: "v1.10.0", SHA: "t2"}, {Name: "v1.9.0", SHA: "t3"}, {Name: "nightly", SHA: "t4"}}
)

// gitConfig has one data source per type of a host: requests, branches and
// tags.
func gitConfig(host, url string) string {
	reqType := map[string]string{"GitHub": "GitHubPullRequest", "GitLab": "GitLabMergeRequest"}[host]
	return inputsConfig(fmt.Sprintf(`
data "stevedore_resourceset_inputs" "requests" {
  type  = %[1]q
  url   = %[2]q
  token = "s3cret"
  filter {
    labels = ["deploy/preview"]
  }
  skip {
    labels = ["pause"]
  }
  default_values = { chart = "charts/app" }
}

data "stevedore_resourceset_inputs" "branches" {
  type     = "%[3]sBranch"
  url      = %[2]q
  password = "s3cret"
  filter {
    exclude_branch = "^wip/"
  }
}

data "stevedore_resourceset_inputs" "tags" {
  type  = "%[3]sTag"
  url   = %[2]q
  token = "s3cret"
  filter {
    semver = ">=1.0.0"
    limit  = 2
  }
}
`, reqType, url, host), "requests", "branches", "tags")
}

func testGitHost(t *testing.T, host, url string, slug bool, set func(crs []inputstest.ChangeRequest)) {
	s := func(m map[string]string, ref string) map[string]string {
		if slug {
			m["slug"] = strings.Trim(regexp.MustCompile(`[^a-z0-9-]`).ReplaceAllString(strings.ToLower(ref), "-"), "-")
		}
		return m
	}
	pr := func(n, title, author, branch, sha, labels string) map[string]string {
		return s(map[string]string{"id": n, "sha": sha, "branch": branch, "title": title, "author": author, "labels": labels, "chart": "charts/app"}, branch)
	}
	config := gitConfig(host, url)
	inputsAccTest(t, resource.TestCase{Steps: []resource.TestStep{
		{
			PreConfig: func() { set(accRequests) },
			Config:    config,
			ConfigStateChecks: []statecheck.StateCheck{
				expectInputs("requests", pr("2", "Add UI", "bob", "feat/ui", "b2", "deploy/preview")),
				expectInputs("branches",
					s(map[string]string{"id": inputs.ID("feat/a"), "branch": "feat/a", "sha": "f1"}, "feat/a"),
					s(map[string]string{"id": inputs.ID("main"), "branch": "main", "sha": "m1"}, "main")),
				expectInputs("tags",
					s(map[string]string{"id": inputs.ID("v1.10.0"), "tag": "v1.10.0", "sha": "t2"}, "v1.10.0"),
					s(map[string]string{"id": inputs.ID("v1.9.0"), "tag": "v1.9.0", "sha": "t3"}, "v1.9.0")),
			},
		},
		{
			// A new labeled request opens: the next plan reads it, newest first.
			PreConfig: func() {
				set(append(append([]inputstest.ChangeRequest{}, accRequests...),
					inputstest.ChangeRequest{Number: 12, Title: "New", Author: "eve", Branch: "feat/new", SHA: "e12", Labels: []string{"deploy/preview"}}))
			},
			Config: config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction("terraform_data.inputs", plancheck.ResourceActionUpdate),
			}},
			ConfigStateChecks: []statecheck.StateCheck{
				expectInputs("requests",
					pr("12", "New", "eve", "feat/new", "e12", "deploy/preview"),
					pr("2", "Add UI", "bob", "feat/ui", "b2", "deploy/preview")),
			},
		},
		{
			Config:      strings.Replace(config, `password = "s3cret"`, `password = "wrong"`, 1),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)Cannot read the inputs.*401`),
		},
	}})
}

// GitHubPullRequest, GitHubBranch and GitHubTag through go-github against a
// fake GitHub Enterprise API that pages two items at a time.
func TestAccResourceSetInputs_gitHub(t *testing.T) {
	t.Parallel()
	gh := inputstest.StartGitHub("org", "app", "s3cret", 2)
	t.Cleanup(gh.Close)
	testGitHost(t, "GitHub", gh.RepoURL(), false, func(crs []inputstest.ChangeRequest) { gh.Set(crs, accBranches, accTags) })
}

// GitLabMergeRequest, GitLabBranch and GitLabTag through GitLab's client-go
// against a fake GitLab API that pages two items at a time.
func TestAccResourceSetInputs_gitLab(t *testing.T) {
	t.Parallel()
	gl := inputstest.StartGitLab("group/sub/app", "s3cret", 2)
	t.Cleanup(gl.Close)
	testGitHost(t, "GitLab", gl.ProjectURL(), true, func(crs []inputstest.ChangeRequest) { gl.Set(crs, accBranches, accTags) })
}

// The preview environments: the OCI tags of the in-process registry feed a
// stevedore_resourceset; a tag pushed between two plans shows in the next
// plan as a new set of objects, which the apply creates.
func TestAccResourceSetInputs_previewEnvironments(t *testing.T) {
	t.Parallel()
	testenv.Need(t)
	reg, err := testenv.StartOCIRegistry(testenv.OCIRegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	ns := testenv.Namespace(t, testClient(t), "previews")
	o := &ociTags{t: t, repo: reg.Host() + "/" + testenv.UniqueName(t, "app"), auth: authn.Anonymous}
	o.pushNext()
	config := providerBlock("") + fmt.Sprintf(`
data "stevedore_resourceset_inputs" "tags" {
  type     = "OCIArtifactTag"
  url      = %s
  insecure = true
  filter {
    semver = ">=1.0.0"
  }
}

resource "stevedore_resourceset" "previews" {
  name      = "previews"
  namespace = %s
  inputs    = concat(data.stevedore_resourceset_inputs.tags.inputs, [{ id = "main", tag = "main", digest = "" }])
  resources_template = <<-EOT
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: preview-<< inputs.id >>
    data:
      tag: "<< inputs.tag >>"
      digest: "<< inputs.digest >>"
  EOT
}
`, q("oci://"+o.repo), q(ns))
	const rs = "stevedore_resourceset.previews"
	// Every tag pushed so far has its ConfigMap, and main its own.
	inventory := lazy(func() knownvalue.Check { return knownvalue.ListSizeExact(len(o.newest(1000)) + 1) })
	allThere := func(*terraform.State) error {
		for _, tag := range o.newest(1000) {
			if err := checkConfigMapValue(t, ns, "preview-"+inputs.ID(tag), "digest", o.digest(tag))(nil); err != nil {
				return err
			}
		}
		return checkConfigMapValue(t, ns, "preview-main", "tag", "main")(nil)
	}
	accTest(t, resource.TestCase{Steps: []resource.TestStep{
		{
			Config:            config,
			ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(rs, tfjsonpath.New("inventory"), inventory)},
			Check:             allThere,
		},
		{
			PreConfig: func() { o.pushNext() },
			Config:    config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(rs, plancheck.ResourceActionUpdate),
				// The new tag's objects, and only they, are created.
				plancheck.ExpectKnownValue(rs, tfjsonpath.New("changes"), lazy(func() knownvalue.Check {
					return knownvalue.ListExact([]knownvalue.Check{
						change(ns+"_preview-"+inputs.ID(o.newest(1)[0])+"__ConfigMap", "create"),
					})
				})),
				plancheck.ExpectKnownValue(rs, tfjsonpath.New("inventory"), inventory),
			}},
			Check: allThere,
		},
	}})
}
