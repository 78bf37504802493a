package chart

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	// The signature envelope formats a Notation signature comes in, as
	// source-controller registers them.
	_ "github.com/notaryproject/notation-core-go/signature/cose"
	_ "github.com/notaryproject/notation-core-go/signature/jws"
	"github.com/notaryproject/notation-go"
	notationregistry "github.com/notaryproject/notation-go/registry"
	"github.com/notaryproject/notation-go/verifier"
	"github.com/notaryproject/notation-go/verifier/trustpolicy"
	"github.com/notaryproject/notation-go/verifier/truststore"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
)

// The attributes of a Notation verification, named after the keys of the
// Secret a Flux HelmChart's spec.verify.secretRef names: `trustpolicy.json`
// and the CA certificates, every key ending in `.crt` or `.pem`.
const (
	fieldTrustPolicy = "verify.trust_policy_json"
	fieldCACerts     = "verify.ca_certificates"
)

// notationMaxSignatures is how many signatures of one chart are tried, as
// source-controller tries.
const notationMaxSignatures = 3

// ParseTrustPolicy parses a Notation trust policy document
// (`trustpolicy.json`) and checks it as notation-go does. A statement at the
// `skip` level that names trust stores or trusted identities has them
// dropped, as source-controller drops them (notation-go refuses such a
// statement); cleaned lists the statements that were. No request is made.
func ParseTrustPolicy(data []byte) (doc *trustpolicy.Document, cleaned []string, err error) {
	doc = &trustpolicy.Document{}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(doc); err != nil {
		return nil, nil, fmt.Errorf("not a trust policy document (JSON): %w", err)
	}
	if dec.More() {
		return nil, nil, errors.New("not a trust policy document: more than one JSON value")
	}
	for i, st := range doc.TrustPolicies {
		if st.SignatureVerification.VerificationLevel == trustpolicy.LevelSkip.Name && (len(st.TrustStores) > 0 || len(st.TrustedIdentities) > 0) {
			doc.TrustPolicies[i].TrustStores, doc.TrustPolicies[i].TrustedIdentities = nil, nil
			cleaned = append(cleaned, st.Name)
		}
	}
	if err := doc.Validate(); err != nil {
		return nil, nil, err
	}
	return doc, cleaned, nil
}

// ParseCACertificate parses one CA certificate of a Notation trust store:
// PEM blocks (one or more) or DER, as source-controller reads them.
func ParseCACertificate(data []byte) ([]*x509.Certificate, error) {
	rest := bytes.TrimSpace(data)
	if len(rest) == 0 {
		return nil, errors.New("empty: not a certificate")
	}
	if !bytes.HasPrefix(rest, []byte("-----BEGIN")) {
		certs, err := x509.ParseCertificates(rest)
		if err != nil {
			return nil, fmt.Errorf("not a PEM or DER certificate: %w", err)
		}
		return certs, nil
	}
	var out []*x509.Certificate
	for len(rest) > 0 {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("holds a PEM %q block, not a CERTIFICATE", block.Type)
		}
		certs, err := x509.ParseCertificates(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("not a certificate: %w", err)
		}
		out = append(out, certs...)
		rest = bytes.TrimSpace(rest)
	}
	if len(out) == 0 {
		return nil, errors.New("holds no PEM certificate")
	}
	return out, nil
}

// IsCACertificateKey reports whether key names a CA certificate in Flux's
// Notation Secret: it ends in `.crt` or `.pem`.
func IsCACertificateKey(key string) bool {
	return strings.HasSuffix(key, ".crt") || strings.HasSuffix(key, ".pem")
}

// validateNotation checks a Notation verification's material without any
// request; the errors name the attribute.
func validateNotation(v *Verify) []error {
	var errs []error
	if len(v.PublicKeys) > 0 || len(v.Identities) > 0 {
		errs = append(errs, fieldErr("verify", errors.New("public_keys and match_oidc_identity are cosign's: a notation verification takes trust_policy_json and ca_certificates")))
	}
	if len(bytes.TrimSpace(v.TrustPolicy)) == 0 {
		errs = append(errs, fieldErr(fieldTrustPolicy, errors.New("notation verification needs the trust policy document (Flux's trustpolicy.json)")))
	} else if _, _, err := ParseTrustPolicy(v.TrustPolicy); err != nil {
		errs = append(errs, fieldErr(fieldTrustPolicy, err))
	}
	if len(v.CACerts) == 0 {
		errs = append(errs, fieldErr(fieldCACerts, errors.New("notation verification needs at least one CA certificate (Flux's *.crt or *.pem keys)")))
	}
	for _, k := range sortedKeys(v.CACerts) {
		if !IsCACertificateKey(k) {
			errs = append(errs, fieldErr(fieldCACerts, fmt.Errorf("%q: a CA certificate's key ends in .crt or .pem, as in Flux's Secret", k)))
			continue
		}
		if _, err := ParseCACertificate(v.CACerts[k]); err != nil {
			errs = append(errs, fieldErr(fieldCACerts, fmt.Errorf("%q: %w", k, err)))
		}
	}
	return errs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// notationStore is the trust store of a verification: every CA certificate
// given, in whatever store the trust policy names (`ca:<name>`,
// `signingAuthority:<name>`, `tsa:<name>`), as source-controller's in-memory
// store serves the certificates of its Secret.
type notationStore struct{ certs []*x509.Certificate }

func (s notationStore) GetCertificates(context.Context, truststore.Type, string) ([]*x509.Certificate, error) {
	return s.certs, nil
}

// NotationVerdict is what a Notation verification concluded of a chart that
// did not fail it.
type NotationVerdict struct {
	// Verified is false when the trust policy statement that applies does
	// not enforce authenticity: level skip, or an authenticity failure that
	// the statement only logs (audit). The chart is then used unverified,
	// as source-controller uses it, and Reason says why.
	Verified bool
	Reason   string
}

// verifyNotation checks the Notation signatures of ref
// (host/path/name@digest) against the trust policy and CA certificates of v,
// as source-controller's HelmChart does with spec.verify.provider notation.
// A chart with no signature, or none that the applicable trust policy
// statement accepts, or no statement that applies to it, is an
// ErrVerification error that names ref and the trust policy's verdict.
func verifyNotation(ctx context.Context, v *Verify, ref string, plainHTTP bool, a Auth) (NotationVerdict, error) {
	if errs := validateNotation(v); len(errs) > 0 {
		return NotationVerdict{}, errors.Join(errs...)
	}
	doc, _, _ := ParseTrustPolicy(v.TrustPolicy)
	var store notationStore
	for _, k := range sortedKeys(v.CACerts) {
		certs, _ := ParseCACertificate(v.CACerts[k])
		store.certs = append(store.certs, certs...)
	}
	failed := func(err error) (NotationVerdict, error) {
		return NotationVerdict{}, fieldErr("verify", marked(err, ErrVerification))
	}
	statement, err := doc.GetApplicableTrustPolicy(ref)
	if err != nil {
		return failed(fmt.Errorf("no trust policy statement applies to '%s': %v", ref, err))
	}
	verdict := fmt.Sprintf("trust policy statement '%s' (level %s)", statement.Name, levelName(statement))
	vf, err := verifier.New(doc, store, nil)
	if err != nil {
		return NotationVerdict{}, fieldErr(fieldTrustPolicy, err)
	}
	repo, err := notationRepository(ref, plainHTTP, a)
	if err != nil {
		return NotationVerdict{}, err
	}
	_, outcomes, err := notation.Verify(ctx, vf, notationregistry.NewRepository(repo), notation.VerifyOptions{
		ArtifactReference:    ref,
		MaxSignatureAttempts: notationMaxSignatures,
	})
	if err != nil {
		if ctx.Err() != nil {
			return NotationVerdict{}, ctx.Err()
		}
		// notation-go joins one error per signature tried, line by line.
		why := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
		return failed(fmt.Errorf("no valid notation signature for '%s' under %s: %s", ref, verdict, why))
	}
	if len(outcomes) == 0 {
		return failed(fmt.Errorf("no valid notation signature for '%s' under %s: no verification outcome", ref, verdict))
	}
	out := outcomes[0]
	if out.VerificationLevel != nil && out.VerificationLevel.Name == trustpolicy.LevelSkip.Name {
		return NotationVerdict{Reason: fmt.Sprintf("%s skips signature verification of '%s'", verdict, ref)}, nil
	}
	for _, r := range out.VerificationResults {
		if r.Error != nil && r.Type == trustpolicy.TypeAuthenticity {
			return NotationVerdict{Reason: fmt.Sprintf("%s only logs the failed authenticity check of '%s': %v", verdict, ref, r.Error)}, nil
		}
	}
	return NotationVerdict{Verified: true}, nil
}

func levelName(st *trustpolicy.TrustPolicy) string {
	if l, err := st.SignatureVerification.GetVerificationLevel(); err == nil {
		return l.Name
	}
	return st.SignatureVerification.VerificationLevel
}

// notationRepository is the registry repository of ref for notation-go: the
// chart's own HTTP client (its TLS settings), its credentials for the
// registry's host only, plain HTTP as the chart was pulled.
func notationRepository(ref string, plainHTTP bool, a Auth) (*remote.Repository, error) {
	name, _, _ := strings.Cut(ref, "@")
	repo, err := remote.NewRepository(name)
	if err != nil {
		return nil, fmt.Errorf("invalid chart reference '%s': %w", ref, err)
	}
	hc, err := httpClient(a)
	if err != nil {
		return nil, err
	}
	client := &auth.Client{
		Client: hc,
		Header: http.Header{"User-Agent": {userAgent}},
		Cache:  auth.NewCache(),
	}
	if a.Username != "" || a.Password != "" {
		client.Credential = auth.StaticCredential(repo.Reference.Registry, auth.Credential{Username: a.Username, Password: a.Password})
	}
	repo.Client = client
	repo.PlainHTTP = plainHTTP
	return repo, nil
}
