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
// The optional interfaces tf6server looks for beyond ProviderServer, list
// resources (terraform query) and actions, are forwarded as they are: the
// framework's server implements both. Their streaming RPCs (ListResource,
// InvokeAction) keep the request's own context, which their streams use after
// the RPC returns. State stores are not forwarded: stevedore has none.
func NewServer(version string) func() tfprotov6.ProviderServer {
	return func() tfprotov6.ProviderServer {
		framework := providerserver.NewProtocol6(New(version)())()
		return &releasingServer{ProviderServer: framework, more: framework.(frameworkServer)}
	}
}

// frameworkServer is what terraform-plugin-framework's protocol 6 server
// implements: every RPC a provider can serve.
type frameworkServer interface {
	tfprotov6.ProviderServer
	tfprotov6.ListResourceServer
	tfprotov6.ActionServer
}

// releasingServer wraps the RPCs that tofu makes once per resource instance,
// the ones that add up, and forwards the list resource and action RPCs.
type releasingServer struct {
	tfprotov6.ProviderServer
	more frameworkServer
}

var _ frameworkServer = (*releasingServer)(nil)

func (s *releasingServer) ValidateListResourceConfig(ctx context.Context, req *tfprotov6.ValidateListResourceConfigRequest) (*tfprotov6.ValidateListResourceConfigResponse, error) {
	return s.more.ValidateListResourceConfig(ctx, req)
}

func (s *releasingServer) ListResource(ctx context.Context, req *tfprotov6.ListResourceRequest) (*tfprotov6.ListResourceServerStream, error) {
	return s.more.ListResource(ctx, req)
}

func (s *releasingServer) ValidateActionConfig(ctx context.Context, req *tfprotov6.ValidateActionConfigRequest) (*tfprotov6.ValidateActionConfigResponse, error) {
	return s.more.ValidateActionConfig(ctx, req)
}

func (s *releasingServer) PlanAction(ctx context.Context, req *tfprotov6.PlanActionRequest) (*tfprotov6.PlanActionResponse, error) {
	return s.more.PlanAction(ctx, req)
}

func (s *releasingServer) InvokeAction(ctx context.Context, req *tfprotov6.InvokeActionRequest) (*tfprotov6.InvokeActionServerStream, error) {
	return s.more.InvokeAction(ctx, req)
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
