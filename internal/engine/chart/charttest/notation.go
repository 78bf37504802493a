package charttest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"time"

	"github.com/notaryproject/notation-core-go/signature/cose"
	"github.com/notaryproject/notation-go"
	notationregistry "github.com/notaryproject/notation-go/registry"
	"github.com/notaryproject/notation-go/signer"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
)

// NotationCA is a test certificate authority for Notation: a self-signed
// root, and a code-signing leaf certificate it issued, whose key signs.
// Both are made in memory for one test run; nothing is written to disk.
type NotationCA struct {
	Root    *x509.Certificate
	Leaf    *x509.Certificate
	leafKey *ecdsa.PrivateKey
	// RootPEM is the root certificate as a trust store holds it (a `.crt`
	// or `.pem` key of Flux's Notation Secret).
	RootPEM []byte
}

// NewNotationCA makes a root and a leaf certificate that satisfy the Notary
// Project's certificate requirements (ECDSA P-256; the root a CA that may
// sign certificates, the leaf a code-signing certificate), valid from an
// hour ago for a day. name goes into their subjects.
func NewNotationCA(name string) (*NotationCA, error) {
	rootKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	subject := func(cn string) pkix.Name {
		return pkix.Name{Country: []string{"US"}, Province: []string{"WA"}, Locality: []string{"Seattle"},
			Organization: []string{"stevedore tests"}, CommonName: cn}
	}
	rootTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               subject(name + " root"),
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            1,
	}
	rootDER, err := x509.CreateCertificate(rand.Reader, rootTmpl, rootTmpl, &rootKey.PublicKey, rootKey)
	if err != nil {
		return nil, fmt.Errorf("notation CA %s: root: %w", name, err)
	}
	root, err := x509.ParseCertificate(rootDER)
	if err != nil {
		return nil, err
	}
	leafTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(2),
		Subject:               subject(name + " signer"),
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		BasicConstraintsValid: true,
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, root, &leafKey.PublicKey, rootKey)
	if err != nil {
		return nil, fmt.Errorf("notation CA %s: leaf: %w", name, err)
	}
	leaf, err := x509.ParseCertificate(leafDER)
	if err != nil {
		return nil, err
	}
	return &NotationCA{
		Root: root, Leaf: leaf, leafKey: leafKey,
		RootPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rootDER}),
	}, nil
}

// Sign signs the manifest at ref (host/path/name@sha256:...) as `notation
// sign` does, with notation-go's generic signer and the leaf's key and
// chain, and pushes the signature to the registry as an OCI referrer of the
// manifest (or, where the registry has no referrers API, under the tag
// schema's `sha256-<hex>` index, as oras-go falls back). The registry is
// spoken to over plain HTTP, with basic auth when username or password is
// set.
func (ca *NotationCA) Sign(ref, username, password string) error {
	s, err := signer.NewGenericSigner(ca.leafKey, []*x509.Certificate{ca.Leaf, ca.Root})
	if err != nil {
		return fmt.Errorf("notation sign %s: %w", ref, err)
	}
	repo, err := remote.NewRepository(ref)
	if err != nil {
		return fmt.Errorf("notation sign %s: %w", ref, err)
	}
	repo.PlainHTTP = true
	client := &auth.Client{Client: &http.Client{Timeout: time.Minute}, Cache: auth.NewCache()}
	if username != "" || password != "" {
		client.Credential = auth.StaticCredential(repo.Reference.Registry, auth.Credential{Username: username, Password: password})
	}
	repo.Client = client
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = notation.Sign(ctx, s, notationregistry.NewRepository(repo), notation.SignOptions{
		SignerSignOptions: notation.SignerSignOptions{SignatureMediaType: cose.MediaTypeEnvelope},
		ArtifactReference: ref,
	})
	if err != nil {
		return fmt.Errorf("notation sign %s: %w", ref, err)
	}
	return nil
}

// TrustPolicy is a trust policy document (`trustpolicy.json`) with one
// statement at level strict for scope (a repository, host/path/name, or
// `*`), trusting the CA store `ca:<store>` and any identity.
func TrustPolicy(statement, scope, store string) []byte {
	return TrustPolicyAt(statement, scope, store, "strict")
}

// TrustPolicyAt is TrustPolicy at another verification level (`strict`,
// `permissive`, `audit` or `skip`); a skip statement names no store or
// identity, as the Notary Project's rules want.
func TrustPolicyAt(statement, scope, store, level string) []byte {
	st := map[string]any{
		"name":                  statement,
		"registryScopes":        []string{scope},
		"signatureVerification": map[string]any{"level": level},
		"trustStores":           []string{"ca:" + store},
		"trustedIdentities":     []string{"*"},
	}
	if level == "skip" {
		st["trustStores"], st["trustedIdentities"] = []string{}, []string{}
	}
	data, err := json.MarshalIndent(map[string]any{"version": "1.0", "trustPolicies": []any{st}}, "", "  ")
	if err != nil {
		panic(err)
	}
	return data
}
