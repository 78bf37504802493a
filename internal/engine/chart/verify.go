package chart

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"regexp"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v2/cmd/cosign/cli/fulcio"
	"github.com/sigstore/cosign/v2/cmd/cosign/cli/options"
	"github.com/sigstore/cosign/v2/cmd/cosign/cli/rekor"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	sigs "github.com/sigstore/cosign/v2/pkg/signature"
)

// ErrVerification marks a signature that is missing or does not match.
var ErrVerification = errors.New("verification failed")

// CheckPublicKey checks that key is a PEM public key cosign can verify with,
// without any request: a key that is not one is the configuration's error,
// reported before the registry is asked for anything.
func CheckPublicKey(key []byte) error {
	if _, err := sigs.LoadPublicKeyRaw(key, crypto.SHA256); err != nil {
		return fmt.Errorf("not a PEM public key: %w", err)
	}
	return nil
}

// verifyCosign checks the cosign signatures of ref (host/path/name@digest).
// With public keys, each key is tried in turn and any one that verifies a
// signature passes; verification is offline (no transparency log), as Flux's
// is with keys. Without keys it is keyless: the certificate must chain to
// Fulcio, be logged in Rekor, and match one of the identities (issuer and
// subject are regular expressions; the identities are OR-ed); without
// identities any certified identity passes, as in Flux.
func verifyCosign(ctx context.Context, v *Verify, ref string, plainHTTP bool, auth Auth) error {
	var nameOpts []name.Option
	if plainHTTP {
		nameOpts = append(nameOpts, name.Insecure)
	}
	r, err := name.ParseReference(ref, nameOpts...)
	if err != nil {
		return fmt.Errorf("invalid chart reference '%s': %w", ref, err)
	}
	remoteOpts := []remote.Option{remote.WithContext(ctx), remote.WithUserAgent(userAgent)}
	if auth.Username != "" || auth.Password != "" {
		remoteOpts = append(remoteOpts, remote.WithAuth(&authn.Basic{Username: auth.Username, Password: auth.Password}))
	}
	hc, err := httpClient(auth)
	if err != nil {
		return err
	}
	remoteOpts = append(remoteOpts, remote.WithTransport(hc.Transport))
	base := cosign.CheckOpts{
		RegistryClientOpts: []ociremote.Option{ociremote.WithRemoteOptions(remoteOpts...)},
		ClaimVerifier:      cosign.SimpleClaimVerifier,
	}

	if len(v.PublicKeys) > 0 {
		var errs []error
		for i, key := range v.PublicKeys {
			verifier, err := sigs.LoadPublicKeyRaw(key, crypto.SHA256)
			if err != nil {
				return elemErr("verify.public_keys", i, fmt.Errorf("not a PEM public key: %w", err))
			}
			co := base
			co.SigVerifier = verifier
			co.IgnoreTlog = true
			co.IgnoreSCT = true
			co.Offline = true
			checked, _, err := cosign.VerifyImageSignatures(ctx, r, &co)
			if err == nil && len(checked) > 0 {
				return nil
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("public_keys[%d]: %w", i, err))
			}
		}
		return fieldErr("verify", marked(fmt.Errorf("no matching signatures were found for '%s': %w", ref, errors.Join(errs...)), ErrVerification))
	}

	co := base
	if co.Identities, err = keylessIdentities(v.Identities); err != nil {
		return err
	}
	// Fetching the Sigstore trust roots takes no context (TUF over the
	// network): do not let it outlive the apply.
	if _, err := withContext(ctx, func() (struct{}, error) { return struct{}{}, keylessTrust(ctx, &co) }); err != nil {
		return err
	}
	checked, _, err := cosign.VerifyImageSignatures(ctx, r, &co)
	if err != nil || len(checked) == 0 {
		return fieldErr("verify", marked(fmt.Errorf("no matching signatures were found for '%s': %v", ref, err), ErrVerification))
	}
	return nil
}

// keylessIdentities are the identities a keyless signature's certificate
// must match, any one of them. None means any identity Fulcio certified, as
// Flux verifies without matchOIDCIdentity (cosign checks no identity then).
func keylessIdentities(ids []Identity) ([]cosign.Identity, error) {
	var out []cosign.Identity
	for i, id := range ids {
		if _, err := regexp.Compile(id.Issuer); err != nil {
			return nil, fieldErr("verify", fmt.Errorf("match_oidc_identity[%d].issuer: %w", i, err))
		}
		if _, err := regexp.Compile(id.Subject); err != nil {
			return nil, fieldErr("verify", fmt.Errorf("match_oidc_identity[%d].subject: %w", i, err))
		}
		out = append(out, cosign.Identity{IssuerRegExp: id.Issuer, SubjectRegExp: id.Subject})
	}
	return out, nil
}

// keylessTrust fills in the Fulcio roots, Rekor and CT log keys and a Rekor
// client, as Flux's keyless verifier does.
func keylessTrust(ctx context.Context, co *cosign.CheckOpts) error {
	var err error
	if co.RootCerts, err = fulcio.GetRoots(); err != nil {
		return fmt.Errorf("keyless verification: Fulcio roots: %w", err)
	}
	if co.IntermediateCerts, err = fulcio.GetIntermediates(); err != nil {
		return fmt.Errorf("keyless verification: Fulcio intermediates: %w", err)
	}
	if co.RekorPubKeys, err = cosign.GetRekorPubs(ctx); err != nil {
		return fmt.Errorf("keyless verification: Rekor public keys: %w", err)
	}
	if co.CTLogPubKeys, err = cosign.GetCTLogPubs(ctx); err != nil {
		return fmt.Errorf("keyless verification: CT log public keys: %w", err)
	}
	if co.RekorClient, err = rekor.NewClient(options.DefaultRekorURL); err != nil {
		return fmt.Errorf("keyless verification: Rekor client: %w", err)
	}
	return nil
}
