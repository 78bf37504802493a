// Package charttest holds test helpers of the chart engine that other test
// packages need too: cosign key pairs and signing of OCI charts, and large
// generated repository indexes. Nothing here is used by the provider itself.
package charttest

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"sigs.k8s.io/yaml"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

// KeyPair is a cosign ECDSA P-256 key pair.
type KeyPair struct {
	Private *ecdsa.PrivateKey
	// PublicPEM is the public key as `cosign public-key` prints it.
	PublicPEM []byte
}

// NewKeyPair generates a key pair.
func NewKeyPair() (*KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	pub, err := cryptoutils.MarshalPublicKeyToPEM(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	return &KeyPair{Private: key, PublicPEM: pub}, nil
}

// SignWithAuth signs the manifest at ref (host/path/name@sha256:...) the way
// `cosign sign --key` does, without a transparency log entry, and writes the
// signature to the registry as `sha256-<hex>.sig`, with basic auth when
// username or password is set. Loopback registries are spoken to over plain
// HTTP.
func (k *KeyPair) SignWithAuth(ref, username, password string) error {
	var opts []ociremote.Option
	if username != "" || password != "" {
		opts = append(opts, ociremote.WithRemoteOptions(remote.WithAuth(&authn.Basic{Username: username, Password: password})))
	}
	d, err := name.NewDigest(ref, name.Insecure)
	if err != nil {
		return fmt.Errorf("sign %s: %w", ref, err)
	}
	se, err := ociremote.SignedEntity(d, opts...)
	if err != nil {
		return fmt.Errorf("sign %s: %w", ref, err)
	}
	pl, err := (&payload.Cosign{Image: d}).MarshalJSON()
	if err != nil {
		return fmt.Errorf("sign %s: payload: %w", ref, err)
	}
	signer, err := signature.LoadECDSASignerVerifier(k.Private, crypto.SHA256)
	if err != nil {
		return fmt.Errorf("sign %s: %w", ref, err)
	}
	sig, err := signer.SignMessage(bytes.NewReader(pl))
	if err != nil {
		return fmt.Errorf("sign %s: %w", ref, err)
	}
	ociSig, err := static.NewSignature(pl, base64.StdEncoding.EncodeToString(sig))
	if err != nil {
		return fmt.Errorf("sign %s: %w", ref, err)
	}
	signed, err := mutate.AttachSignatureToEntity(se, ociSig)
	if err != nil {
		return fmt.Errorf("sign %s: %w", ref, err)
	}
	if err := ociremote.WriteSignatures(d.Repository, signed, opts...); err != nil {
		return fmt.Errorf("sign %s: write signature: %w", ref, err)
	}
	return nil
}

// GenerateIndex returns an index.yaml as Helm writes it (repo.IndexFile
// marshalled with sigs.k8s.io/yaml, as IndexFile.WriteFile does) of charts x
// versions entries with the descriptions, maintainers, sources, keywords,
// dependencies and annotations real indexes carry: about 2 KB per entry, so
// 10,000 entries make about 20 MB. The last chart is named "podinfo"; every
// ninth version is a release candidate.
func GenerateIndex(charts, versions int) ([]byte, error) {
	idx := repo.NewIndexFile()
	created := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	desc := strings.Repeat("A Helm chart that deploys a service with sensible defaults, probes, autoscaling and a service monitor. ", 7)
	for c := 0; c < charts; c++ {
		chartName := fmt.Sprintf("chart-%04d", c)
		if c == charts-1 {
			chartName = "podinfo"
		}
		for v := 0; v < versions; v++ {
			version := fmt.Sprintf("%d.%d.%d", v/10, v%10, c%7)
			if v%9 == 8 {
				version += "-rc.1"
			}
			md := &chart.Metadata{
				APIVersion:  chart.APIVersionV2,
				Name:        chartName,
				Version:     version,
				AppVersion:  fmt.Sprintf("%d.%d.0", 6+v/10, v%10),
				Description: strings.TrimSpace(desc),
				Home:        "https://github.com/example/" + chartName,
				Icon:        "https://raw.githubusercontent.com/example/" + chartName + "/main/logo.png",
				Keywords:    []string{"kubernetes", "microservice", chartName},
				KubeVersion: ">=1.23.0-0",
				Type:        "application",
				Sources:     []string{"https://github.com/example/" + chartName, "https://github.com/example/" + chartName + "-images"},
				Maintainers: []*chart.Maintainer{
					{Name: "maintainer-one", Email: "maintainer-one@example.com"},
					{Name: "maintainer-two", Email: "maintainer-two@example.com"},
				},
				Dependencies: []*chart.Dependency{
					{Name: "redis", Version: "17.x.x", Repository: "https://charts.example.com/bitnami", Condition: "redis.enabled"},
				},
				Annotations: map[string]string{
					"artifacthub.io/changes": "- kind: added\n  description: Support for topology spread constraints in release " +
						version + "\n- kind: fixed\n  description: Probe timeouts are configurable again\n",
					"artifacthub.io/license":  "Apache-2.0",
					"artifacthub.io/operator": "false",
				},
			}
			sum := sha256.Sum256([]byte(chartName + "-" + version))
			url := fmt.Sprintf("https://github.com/example/%s/releases/download/%s-%s/%s-%s.tgz", chartName, chartName, version, chartName, version)
			if err := idx.MustAdd(md, url, "", hex.EncodeToString(sum[:])); err != nil {
				return nil, err
			}
			entries := idx.Entries[chartName]
			entries[len(entries)-1].Created = created.Add(time.Duration(c*versions+v) * time.Minute)
		}
	}
	idx.SortEntries()
	idx.Generated = created
	return yaml.Marshal(idx)
}
