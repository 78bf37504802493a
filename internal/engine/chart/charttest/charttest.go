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
	"fmt"
	"strings"
	"time"

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

// Sign signs the manifest at ref (host/path/name@sha256:...) the way
// `cosign sign --key` does, without a transparency log entry, and writes the
// signature to the registry as `sha256-<hex>.sig`. Loopback registries are
// spoken to over plain HTTP.
func (k *KeyPair) Sign(ref string) error { return k.SignWithAuth(ref, "", "") }

// SignWithAuth is Sign against a registry that wants basic auth.
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

// GenerateIndex returns an index.yaml, formatted as Helm writes it, of
// charts x versions entries with the descriptions, maintainers, sources,
// keywords and annotations real indexes carry (about 2 KB per entry: 10,000
// entries make about 20 MB). The last chart is named "podinfo".
func GenerateIndex(charts, versions int) []byte {
	var b bytes.Buffer
	b.Grow(charts * versions * 2100)
	created := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	b.WriteString("apiVersion: v1\nentries:\n")
	desc := strings.Repeat("A Helm chart that deploys a service with sensible defaults, probes, autoscaling and a service monitor. ", 7)
	for c := 0; c < charts; c++ {
		chartName := fmt.Sprintf("chart-%04d", c)
		if c == charts-1 {
			chartName = "podinfo"
		}
		fmt.Fprintf(&b, "  %s:\n", chartName)
		for v := versions - 1; v >= 0; v-- {
			version := fmt.Sprintf("%d.%d.%d", v/10, v%10, c%7)
			if v%9 == 8 {
				version += "-rc.1"
			}
			fmt.Fprintf(&b, "  - annotations:\n")
			fmt.Fprintf(&b, "      artifacthub.io/changes: |\n        - kind: added\n          description: Support for topology spread constraints in release %s\n        - kind: fixed\n          description: Probe timeouts are configurable again\n", version)
			fmt.Fprintf(&b, "      artifacthub.io/license: Apache-2.0\n      artifacthub.io/operator: \"false\"\n")
			fmt.Fprintf(&b, "    apiVersion: v2\n    appVersion: %d.%d.0\n", 6+v/10, v%10)
			fmt.Fprintf(&b, "    created: \"%s\"\n", created.Add(time.Duration(c*versions+v)*time.Minute).Format(time.RFC3339Nano))
			fmt.Fprintf(&b, "    dependencies:\n    - condition: redis.enabled\n      name: redis\n      repository: https://charts.example.com/bitnami\n      version: 17.x.x\n")
			fmt.Fprintf(&b, "    description: %s\n", desc)
			fmt.Fprintf(&b, "    digest: %x\n", sha256.Sum256([]byte(chartName+"-"+version)))
			fmt.Fprintf(&b, "    home: https://github.com/example/%s\n", chartName)
			fmt.Fprintf(&b, "    icon: https://raw.githubusercontent.com/example/%s/main/logo.png\n", chartName)
			fmt.Fprintf(&b, "    keywords:\n    - kubernetes\n    - microservice\n    - %s\n", chartName)
			fmt.Fprintf(&b, "    kubeVersion: '>=1.23.0-0'\n")
			fmt.Fprintf(&b, "    maintainers:\n    - email: maintainer-one@example.com\n      name: maintainer-one\n    - email: maintainer-two@example.com\n      name: maintainer-two\n")
			fmt.Fprintf(&b, "    name: %s\n", chartName)
			fmt.Fprintf(&b, "    sources:\n    - https://github.com/example/%s\n    - https://github.com/example/%s-images\n", chartName, chartName)
			fmt.Fprintf(&b, "    type: application\n")
			fmt.Fprintf(&b, "    urls:\n    - https://github.com/example/%s/releases/download/%s-%s/%s-%s.tgz\n", chartName, chartName, version, chartName, version)
			fmt.Fprintf(&b, "    version: %s\n", version)
		}
	}
	fmt.Fprintf(&b, "generated: \"%s\"\n", created.Format(time.RFC3339Nano))
	return b.Bytes()
}
