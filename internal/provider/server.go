package provider

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// NewServer is the provider's protocol 6 server: the framework's, with every
// resource RPC given a context that lets go of the request once it returns.
//
// Why: terraform-plugin-framework keeps the cancel function of every
// request's context until StopProvider, which tofu and terraform only send on
// an interrupt (proto6server.Server.registerContext), and each holds the whole
// request context, the SDK's logger options included: the provider's live
// heap grows with the number of resource RPCs of a plan (measure it with
// BenchmarkTofuPlanHelmReleases, provider peak RSS). The framework still keeps
// its cancel functions, but each now holds only a releasableContext.
//
// Remove this wrapper when terraform-plugin-framework forgets a request's
// context once its RPC returns (registerContext no longer keeps it until
// StopProvider): main.go then serves providerserver.NewProtocol6(New(version)).
//
// Only the RPCs of ProviderServer are forwarded: stevedore has no list
// resources, actions or state stores, the optional interfaces tf6server looks
// for beyond it.
func NewServer(version string) func() tfprotov6.ProviderServer {
	return func() tfprotov6.ProviderServer {
		return &releasingServer{ProviderServer: providerserver.NewProtocol6(New(version)())()}
	}
}

// releasingServer wraps the RPCs that tofu makes once per resource instance,
// the ones that add up.
type releasingServer struct {
	tfprotov6.ProviderServer
}

// during runs f with a context that forwards to ctx until f returns, and then
// forgets it.
func during[Req, Resp any](ctx context.Context, req Req, f func(context.Context, Req) (Resp, error)) (Resp, error) {
	rc := &releasableContext{}
	rc.parent.Store(&ctx)
	defer rc.release()
	return f(rc, req)
}

func (s *releasingServer) ValidateResourceConfig(ctx context.Context, req *tfprotov6.ValidateResourceConfigRequest) (*tfprotov6.ValidateResourceConfigResponse, error) {
	return during(ctx, req, s.ProviderServer.ValidateResourceConfig)
}

func (s *releasingServer) UpgradeResourceState(ctx context.Context, req *tfprotov6.UpgradeResourceStateRequest) (*tfprotov6.UpgradeResourceStateResponse, error) {
	return during(ctx, req, s.ProviderServer.UpgradeResourceState)
}

func (s *releasingServer) ReadResource(ctx context.Context, req *tfprotov6.ReadResourceRequest) (*tfprotov6.ReadResourceResponse, error) {
	return during(ctx, req, s.ProviderServer.ReadResource)
}

func (s *releasingServer) PlanResourceChange(ctx context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	return during(ctx, req, s.ProviderServer.PlanResourceChange)
}

func (s *releasingServer) ApplyResourceChange(ctx context.Context, req *tfprotov6.ApplyResourceChangeRequest) (*tfprotov6.ApplyResourceChangeResponse, error) {
	return during(ctx, req, s.ProviderServer.ApplyResourceChange)
}

func (s *releasingServer) ImportResourceState(ctx context.Context, req *tfprotov6.ImportResourceStateRequest) (*tfprotov6.ImportResourceStateResponse, error) {
	return during(ctx, req, s.ProviderServer.ImportResourceState)
}

func (s *releasingServer) ReadDataSource(ctx context.Context, req *tfprotov6.ReadDataSourceRequest) (*tfprotov6.ReadDataSourceResponse, error) {
	return during(ctx, req, s.ProviderServer.ReadDataSource)
}

// releasableContext is the request's context until release; after it, it is
// an empty context that is never done. Nothing of the request should use it
// then: the RPC has returned and gRPC has cancelled the request's own context.
type releasableContext struct {
	parent atomic.Pointer[context.Context]
}

func (c *releasableContext) release() { c.parent.Store(nil) }

func (c *releasableContext) ctx() context.Context {
	if p := c.parent.Load(); p != nil {
		return *p
	}
	return context.Background()
}

func (c *releasableContext) Deadline() (time.Time, bool) { return c.ctx().Deadline() }

// Done is the request's Done channel, so that a context derived from this one
// is cancelled with the request: context.WithCancel finds the request's
// cancelCtx through Value and registers with it, without a goroutine.
func (c *releasableContext) Done() <-chan struct{} { return c.ctx().Done() }

func (c *releasableContext) Err() error { return c.ctx().Err() }

func (c *releasableContext) Value(key any) any { return c.ctx().Value(key) }
