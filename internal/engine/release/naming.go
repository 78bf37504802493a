package release

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// maxReleaseNameLen is Helm's limit on release names: the name ends up in
// labels and Secret names with a suffix.
const maxReleaseNameLen = 53

// ReleaseName is the Helm release name of spec: spec.ReleaseName, else
// `<target_namespace>-<name>` when a target namespace is set, else the name.
// A composed name over 53 bytes is shortened to its first 40 bytes, a dash and
// the first 12 hex digits of its sha256, as helm-controller does, so that the
// same spec names the same release under both.
func ReleaseName(spec *Spec) string {
	if spec.ReleaseName != "" {
		return spec.ReleaseName
	}
	name := spec.Name
	if spec.TargetNamespace != "" {
		name = spec.TargetNamespace + "-" + spec.Name
	}
	return shortenName(name)
}

func shortenName(name string) string {
	if len(name) <= maxReleaseNameLen {
		return name
	}
	const hashLen = 12
	sum := sha256.Sum256([]byte(name))
	return name[:maxReleaseNameLen-hashLen-1] + "-" + hex.EncodeToString(sum[:])[:hashLen]
}

// releaseNamespace is where the release's objects go.
func releaseNamespace(spec *Spec) string {
	if spec.TargetNamespace != "" {
		return spec.TargetNamespace
	}
	return spec.Namespace
}

// StorageNamespace is where Helm keeps the release Secrets of spec:
// spec.StorageNamespace, else the resource's namespace, as helm-controller
// keeps a HelmRelease's releases in the HelmRelease's namespace (not in the
// target namespace, where the `helm` CLI would).
func StorageNamespace(spec *Spec) string {
	if spec.StorageNamespace != "" {
		return spec.StorageNamespace
	}
	return spec.Namespace
}

// ImportID is what the import ID of a helmrelease names. Its short form names
// the resource as a Flux user knows the HelmRelease, and the release follows
// from Flux's rules (ReleaseName, StorageNamespace):
//
//	<namespace>/<name>[@<target_namespace>]
//
// flux-system/podinfo@apps is release apps-podinfo, stored in flux-system,
// with its objects in apps; apps/podinfo (what `helm install -n apps podinfo`
// makes) is release podinfo, stored in apps, with its objects in apps. The
// extended form names the release and its storage explicitly, for a release
// installed under other names than Flux's rules give; each part is the
// attribute the configuration then sets:
//
//	<namespace>/<name>[@<target_namespace>][,release_name=<release>][,storage_namespace=<namespace>]
type ImportID struct {
	Namespace, Name, TargetNamespace string
	// ReleaseName and StorageNamespace are what the ID names explicitly;
	// empty means Flux's rule.
	ReleaseName, StorageNamespace string
}

// ImportIDForms describes both forms of an import ID, with examples, for
// diagnostics.
const ImportIDForms = "want <namespace>/<name>[@<target_namespace>], the HelmRelease as Flux names it, whose release name " +
	"(<target_namespace>-<name>, else <name>) and storage namespace (<namespace>) follow Flux's rules " +
	"(flux-system/podinfo@apps: release apps-podinfo stored in flux-system; apps/podinfo: release podinfo stored in apps); " +
	"or, for a release installed under other names, that followed by ,release_name=<release> and/or " +
	",storage_namespace=<namespace> (flux-system/podinfo@apps,release_name=podinfo; apps/podinfo,storage_namespace=flux-system)"

var (
	importHead    = regexp.MustCompile(`^([^/@,=]*)/([^/@,=]*)(@([^/@,=]*))?$`)
	dnsLabel      = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dnsSubdomain  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	importIDParts = []string{"release_name", "storage_namespace"}
)

// ParseImportID reads an import ID in either form. Its errors say what is
// wrong and show both forms.
func ParseImportID(s string) (ImportID, error) {
	var id ImportID
	fail := func(format string, a ...any) (ImportID, error) {
		return ImportID{}, fmt.Errorf("import ID %q: %s; %s", s, fmt.Sprintf(format, a...), ImportIDForms)
	}
	head, rest, _ := strings.Cut(s, ",")
	m := importHead.FindStringSubmatch(head)
	if m == nil {
		return fail("%q is not <namespace>/<name>[@<target_namespace>]", head)
	}
	id.Namespace, id.Name, id.TargetNamespace = m[1], m[2], m[4]
	if m[3] != "" && id.TargetNamespace == "" {
		return fail("the target namespace after @ is empty")
	}
	for _, c := range []struct {
		what, v string
		re      *regexp.Regexp
		max     int
	}{
		{"namespace", id.Namespace, dnsLabel, 63},
		{"name", id.Name, dnsSubdomain, 253},
		{"target namespace", id.TargetNamespace, dnsLabel, 63},
	} {
		if c.what == "target namespace" && c.v == "" {
			continue
		}
		if !c.re.MatchString(c.v) || len(c.v) > c.max {
			return fail("the %s %q is not a valid Kubernetes name", c.what, c.v)
		}
	}
	if rest == "" {
		if strings.HasSuffix(s, ",") {
			return fail("nothing follows the comma")
		}
		return id, nil
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(rest, ",") {
		k, v, ok := strings.Cut(part, "=")
		if !ok || !slices.Contains(importIDParts, k) {
			return fail("%q is not release_name=<release> or storage_namespace=<namespace>", part)
		}
		if seen[k] {
			return fail("%s is given twice", k)
		}
		seen[k] = true
		switch k {
		case "release_name":
			if !dnsSubdomain.MatchString(v) || len(v) > maxReleaseNameLen {
				return fail("the release name %q is not a valid Helm release name (a DNS subdomain of at most %d characters)", v, maxReleaseNameLen)
			}
			id.ReleaseName = v
		case "storage_namespace":
			if !dnsLabel.MatchString(v) || len(v) > 63 {
				return fail("the storage namespace %q is not a valid Kubernetes name", v)
			}
			id.StorageNamespace = v
		}
	}
	return id, nil
}

// spec is the identity of the resource the ID names.
func (id ImportID) spec() *Spec {
	return &Spec{Name: id.Name, Namespace: id.Namespace, TargetNamespace: id.TargetNamespace,
		ReleaseName: id.ReleaseName, StorageNamespace: id.StorageNamespace}
}

// Release is the release the ID names: its name and storage namespace.
func (id ImportID) Release() (releaseName, storageNamespace string) {
	s := id.spec()
	return ReleaseName(s), StorageNamespace(s)
}

// ReleaseNamespace is where the objects of the release the ID names are.
func (id ImportID) ReleaseNamespace() string { return releaseNamespace(id.spec()) }

// String is the ID in its shortest form: release_name and storage_namespace
// only where they differ from what Flux's rules give.
func (id ImportID) String() string {
	s := id.Namespace + "/" + id.Name
	if id.TargetNamespace != "" {
		s += "@" + id.TargetNamespace
	}
	flux := &Spec{Name: id.Name, Namespace: id.Namespace, TargetNamespace: id.TargetNamespace}
	if id.ReleaseName != "" && id.ReleaseName != ReleaseName(flux) {
		s += ",release_name=" + id.ReleaseName
	}
	if id.StorageNamespace != "" && id.StorageNamespace != StorageNamespace(flux) {
		s += ",storage_namespace=" + id.StorageNamespace
	}
	return s
}

// ImportIDOf is the ID that imports release releaseName, stored in storageNS
// with its objects in releaseNS, as a resource named like spec: spec's
// namespace and name, the target namespace where the objects are, and the
// release's names where Flux's rules do not give them.
func ImportIDOf(spec *Spec, releaseName, storageNS, releaseNS string) string {
	id := ImportID{Namespace: spec.Namespace, Name: spec.Name, TargetNamespace: spec.TargetNamespace,
		ReleaseName: releaseName, StorageNamespace: storageNS}
	if releaseNS != "" && releaseNS != releaseNamespace(spec) {
		id.TargetNamespace = releaseNS
		if releaseNS == spec.Namespace {
			id.TargetNamespace = ""
		}
	}
	return id.String()
}
