package provider

import (
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/objectvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
)

// crdPolicy is the validator of install.crds and upgrade.crds.
var crdPolicy = stringvalidator.OneOf("Skip", "Create", "CreateReplace")

// ssaMode is the attribute upgrade.server_side_apply and
// rollback.server_side_apply, helm-controller's ServerSideApplyMode.
func ssaMode(action, auto string) schema.StringAttribute {
	return schema.StringAttribute{Optional: true, Validators: []validator.String{stringvalidator.OneOf(release.SSAModes...)},
		MarkdownDescription: "How the " + action + " writes the release's objects: `enabled` (server-side apply, forcing field " +
			"conflicts), `disabled` (client-side apply, Helm 3's three-way merge) or `auto` (default): the method of " + auto +
			" (its `apply_method`; a revision Helm 3 wrote is client-side). The plan shows the method in `status.apply_method`."}
}

func helmReleaseSchema() schema.Schema {
	optBool := func(desc string) schema.BoolAttribute { return schema.BoolAttribute{Optional: true, Description: desc} }
	duration := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Optional: true, Description: desc, Validators: []validator.String{durationValidator{}}}
	}
	computedStr := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, Description: desc}
	}
	computedInt := func(desc string) schema.Int64Attribute {
		return schema.Int64Attribute{Computed: true, Description: desc}
	}
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	valuesWO, valuesWOVersion := valuesWOAttributes()

	return schema.Schema{
		// Version 1 grouped the status attributes under `status`; version 2
		// moved the bookkeeping out of it into private state (UpgradeState).
		Version: 2,
		Description: "A Helm release installed, upgraded, tested and remediated with the semantics of Flux's helm-controller " +
			"HelmRelease, without a controller in the cluster. Refresh reads the release from Helm storage and compares every " +
			"object of its manifest with the cluster by server-side dry-run: drift shows in the plan as `drift` going to `[]`, " +
			"and one apply corrects it without a new Helm revision.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed: true, Description: "`<namespace>/<name>`.",
			},
			"name": schema.StringAttribute{
				Required:    true,
				Description: "Name of the release resource, as a HelmRelease object's name: the default release name, and the origin label `stevedore.dev/name` on every object.",
				Validators:  []validator.String{stringvalidator.LengthBetween(1, 253), stringvalidator.RegexMatches(dnsSubdomain, "must be a DNS subdomain")},
			},
			"namespace": schema.StringAttribute{
				Required:    true,
				Description: "Namespace of the release resource: where `values_from` objects are read, the default target namespace, and the origin label `stevedore.dev/namespace`.",
				Validators:  []validator.String{stringvalidator.LengthBetween(1, 63), stringvalidator.RegexMatches(dnsLabel, "must be a DNS label")},
			},
			"release_name": schema.StringAttribute{
				// Replacement is decided in ModifyPlan, where the default is known.
				Optional: true, Computed: true,
				Description: "Helm release name. Default: `<target_namespace>-<name>` when `target_namespace` is set, else `name`; a default " +
					"longer than 53 characters is shortened to its first 40 characters, `-` and 12 hex characters of its SHA-256, as Flux does. " +
					"Changing it replaces the release.",
				Validators: []validator.String{stringvalidator.LengthBetween(1, 53), stringvalidator.RegexMatches(dnsSubdomain, "must be a DNS subdomain")},
			},
			"target_namespace": schema.StringAttribute{
				Optional: true, PlanModifiers: replace,
				Description: "Namespace the release's objects are installed in. Default: `namespace`. Changing it replaces the release.",
				Validators:  []validator.String{stringvalidator.LengthBetween(1, 63), stringvalidator.RegexMatches(dnsLabel, "must be a DNS label")},
			},
			"storage_namespace": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Namespace of Helm's release storage (Secrets). Default: `namespace`, where helm-controller stores a " +
					"HelmRelease's releases. A resource that already has state keeps the storage namespace of its state while this is not " +
					"set (releases created when the default was the target namespace stay where they are); set it to move the release. " +
					"Changing it replaces the release.",
				Validators: []validator.String{stringvalidator.LengthBetween(1, 63), stringvalidator.RegexMatches(dnsLabel, "must be a DNS label")},
			},
			"service_account_name": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Impersonate this service account of `namespace` for every Helm action and drift check, so that its RBAC " +
					"bounds what the release may do. It needs: all verbs on the kinds the chart renders, in the namespaces it renders them " +
					"into; `get`, `list`, `create`, `update`, `patch` and `delete` on Secrets in the storage namespace (Helm's release " +
					"records); `get`, `list` and `watch` on Pods, ReplicaSets, Jobs and the chart's workloads for Helm's wait; `create` and " +
					"`delete` on Pods for test hooks; `patch` on every rendered kind for server-side apply dry-runs (drift) and corrections; " +
					"and `create` on Namespaces with `install.create_namespace`. `values_from` objects are read with the provider's own " +
					"credentials, as helm-controller reads them with its own. A denied request names the service account.",
			},
			"max_history": schema.Int64Attribute{
				Optional: true, Description: "Release revisions Helm keeps. Default 5; 0 keeps all.",
				Validators: []validator.Int64{int64validator.AtLeast(0)},
			},
			"timeout": duration("Timeout of each Helm action whose own `timeout` is not set. A Go duration; default `5m`."),
			"suspend": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Flux's `spec.suspend`: refresh still reads the release and its drift, but plan and apply leave it " +
					"alone (the plan warns), and destroy removes the resource from state without uninstalling the release, as " +
					"helm-controller skips the uninstall of a suspended HelmRelease. A release is installed before it can be " +
					"suspended, and a change that would replace it (chart name, `release_name`, namespaces) needs `suspend` unset.",
			},
			"description": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Helm's release description, which `helm history` shows: hashicorp/helm's `description`. An " +
					"install or upgrade writes it in place of Helm's `Install complete` or `Upgrade complete`; a rollback (upgrade " +
					"remediation) writes Helm's `Rollback to <revision>`, as Helm's rollback takes no description, and a failed " +
					"action Helm's error. A new value, or removing it, upgrades the release. An import reads it back from the " +
					"latest release when an install or upgrade gave it one.",
			},
			"wait_strategy": schema.StringAttribute{
				Optional: true, Validators: []validator.String{stringvalidator.OneOf(release.WaitStrategies...)},
				MarkdownDescription: "How installs, upgrades and rollbacks wait for the release's objects, as helm-controller's " +
					"`waitStrategy.name`: `poller` (default) polls each object's kstatus until it is Current, failing as soon as one is " +
					"Failed, as helm-controller and resource sets wait (custom resources with status conditions are waited for too); " +
					"`legacy` is Helm 3's wait (Deployments, StatefulSets, DaemonSets, Pods, PVCs, Services, Jobs; custom resources are " +
					"not waited for). Default `legacy` with the provider's `helm3_defaults`. Hooks and deletions are waited for as Helm's " +
					"legacy wait does under both.",
			},
			"post_render_strategy": schema.StringAttribute{
				Optional: true, Validators: []validator.String{stringvalidator.OneOf(release.PostRenderStrategies...)},
				MarkdownDescription: "What `post_renderers` are given, as helm-controller's `postRenderStrategy`: `combined` (default, " +
					"Helm 4): hooks and templates in one stream, so patches apply to hooks too; `separate` (Helm 4.2): hooks and templates " +
					"in two streams, so that a hook and a template of the same kind and name do not clash in kustomize; `nohooks` (Helm 3, " +
					"and the default with the provider's `helm3_defaults`): templates only. A change applies from the next upgrade; it " +
					"does not upgrade the release by itself.",
			},
			"reset_token": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Any new value resets the failure counters, so that apply tries again after remediation retries " +
					"are exhausted (`RetriesExceeded`), with the same configuration: the `reconcile.fluxcd.io/resetAt` annotation of Flux. " +
					"A change of any other configured attribute resets them too, as a new generation of a HelmRelease does.",
			},
			"force_token": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Any new value forces one upgrade at the next apply, even when the release is in sync or its " +
					"remediation retries are exhausted (an install when it is not installed and out of retries, an upgrade rather than a " +
					"rollback of a failed release): the `reconcile.fluxcd.io/forceAt` annotation of Flux. A drifted release is upgraded " +
					"too. Removing the value forces nothing, and the failure counters are not reset (that is `reset_token`).",
			},
			"persistent_client": schema.BoolAttribute{
				Optional: true,
				Description: "Flux's field, accepted so that HelmRelease specs translate one to one. stevedore always keeps one client, " +
					"one discovery and one RESTMapper per provider process for every release, which is what a persistent client gives.",
			},
			"values": schema.DynamicAttribute{
				Optional: true,
				Description: "Values, as an object (`{ replicaCount = 2 }`, `yamldecode(file(\"values.yaml\"))`), a YAML string, or a list of them " +
					"(`[yamlencode({...}), file(\"b.yaml\")]`, hashicorp/helm's `values`) deep-merged in order as Helm merges `-f` files. " +
					"Compared by content: the release is upgraded when `config_digest` changes, not when formatting does. " +
					"`set`, `set_list` and `set_sensitive` are set into it. " + valuesPrecedence,
			},
			"set":               setAttribute(false),
			"set_list":          setListAttribute(),
			"set_sensitive":     setAttribute(true),
			"values_wo":         valuesWO,
			"values_wo_version": valuesWOVersion,

			"version":               computedInt("Helm revision of the latest release."),
			"chart_name":            computedStr("Name of the released chart. A new chart name replaces the release, or upgrades it with `upgrade.chart_name_change_strategy = \"InPlaceUpdate\"`."),
			"chart_version":         computedStr("Version of the released chart."),
			"app_version":           computedStr("App version of the released chart."),
			"config_digest":         computedStr("Digest of the composed values (`values_from` and `values`), as Flux's `configDigest`: the same values give the same digest as helm-controller's."),
			"post_renderers_digest": computedStr("Digest of `post_renderers`, and of `common_metadata` when it sets anything; a change upgrades the release."),
			"chart_digest": computedStr("Digest of the chart archive of the latest release attempt: `chart.digest`, or that of the " +
				"archive an inline chart built. A new digest upgrades the release."),
			"status": schema.SingleNestedAttribute{
				Computed: true,
				Description: "The latest release's Helm status and dates. A plan that installs or upgrades shows `release_status` as " +
					"`deployed` (an apply that succeeds leaves the release deployed), keeps `first_deployed` where the upgrade keeps it, " +
					"and `last_deployed` as known after apply. The rest of what Flux keeps in a HelmRelease's status (the history, " +
					"the conditions, the failure counters and the last attempted action) is the provider's bookkeeping, kept in private " +
					"state, out of plans.",
				Attributes: map[string]schema.Attribute{
					"release_status": computedStr("Helm status of the latest release: `deployed`, `failed`, `pending-install`, ..."),
					"first_deployed": computedStr("When the release was first deployed (RFC 3339)."),
					"last_deployed":  computedStr("When the latest revision was deployed (RFC 3339)."),
					"apply_method": computedStr("How the latest revision's objects were written, as Helm 4 records it: `ssa` (server-side " +
						"apply) or `csa` (client-side apply; also a revision Helm 3 wrote). A plan that installs or upgrades shows the method " +
						"its release will have (`csa -> ssa` when it changes), or known after apply when a remediation may end the apply on " +
						"a revision written the other way."),
				},
			},
			"changes": schema.ListAttribute{
				Computed: true, ElementType: driftEntryType,
				Description: "What the install or upgrade that the plan shows does to the cluster, per object, worked out at plan by rendering the chart " +
					"and running Helm's own object updates as server-side dry runs: `type` is `create`, `update` (with the changed JSON pointers, " +
					"old and new values, Secret data masked) or `delete`. Unknown when the plan cannot tell (a configuration value, the chart, " +
					"the namespace or a kind is not there yet; apply then leaves it null). Apply records what the plan showed; refresh sets it to null, " +
					"so that every plan shows only the changes of its own install or upgrade and a plan without one leaves it null.",
			},
			"drift": schema.ListAttribute{
				Computed: true, ElementType: driftEntryType,
				Description: "Objects of the release that differ in the cluster, found at refresh by server-side dry-run with the provider's field manager: " +
					"`type` is `update` (with the changed JSON pointers, old and new values, Secret data masked) or `create` (deleted). " +
					"With `drift_detection.mode = \"enabled\"` the plan shows it going to `[]` and apply corrects it.",
			},
		},
		Blocks: map[string]schema.Block{
			"chart": releaseChartBlock(),
			"dependencies": dependenciesBlock("Objects in the cluster that an install or upgrade waits for, within `timeout`: the cluster-side " +
				"form of Flux's `dependsOn`, e.g. a CRD the chart's objects need, or a Flux `HelmRelease` still managed by Flux " +
				"(`ready = true`: Ready=True). Only an apply that installs or upgrades waits; one that changes nothing, tests, " +
				"remediates or uninstalls does not. As in Flux, an unmet dependency is not a release failure: no Helm release is " +
				"written and no failure is counted toward the retries; a create saves nothing, an update keeps the state with a " +
				"`Ready=False` condition of reason `DependencyNotReady`, and the next apply tries again."),
			"values_from": schema.ListNestedBlock{
				MarkdownDescription: "ConfigMaps and Secrets in `namespace` whose values are layered with `values`: " + valuesPrecedence +
					" Read at plan and apply; only the digest of the result is kept.",
				NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
					"kind": schema.StringAttribute{Required: true, Description: "`ConfigMap` or `Secret`.",
						Validators: []validator.String{stringvalidator.OneOf("ConfigMap", "Secret")}},
					"name": schema.StringAttribute{Required: true, Description: "Name of the object.",
						Validators: []validator.String{stringvalidator.RegexMatches(dnsSubdomain, "must be a DNS subdomain")}},
					"values_key": schema.StringAttribute{Optional: true, Description: "Key holding the values. Default `values.yaml`."},
					"target_path": schema.StringAttribute{Optional: true,
						MarkdownDescription: "Helm `--set` path the whole value is placed at, parsed as `--set` parses it (commas, brackets " +
							"and `=` are syntax; a quoted value is a string), or verbatim with `literal`. " + targetPathPrecedence},
					"optional": optBool("Tolerate a missing object (a missing key still fails)."),
					"literal": schema.BoolAttribute{Optional: true,
						MarkdownDescription: "Set the value at `target_path` verbatim, as `helm --set-literal` does (helm-controller 1.6's " +
							"`literal`): commas, brackets, braces, `=` and backslashes are part of the value, so a file's content (JSON, " +
							"multi-line configuration) arrives as one string. Default false. Without `target_path` it has no effect (the " +
							"whole document is merged as YAML), and validation warns."},
				}},
			},
			"common_metadata": releaseCommonMetadataBlock(),
			"health_check_exprs": healthCheckExprsBlock(),
			"install": schema.SingleNestedBlock{
				Description: "Install options.",
				Attributes: map[string]schema.Attribute{
					"timeout": duration("Timeout of the install. Default: `timeout`."),
					"crds": schema.StringAttribute{Optional: true, Validators: []validator.String{crdPolicy},
						Description: "CRDs in the chart's crds/: `Skip`, `Create` (default: create missing ones, never update) or `CreateReplace` (also update existing ones; never delete)."},
					"take_ownership":             takeOwnershipAttr("install"),
					"replace":                    optBool("Reuse the name of a release that was uninstalled with history kept."),
					"create_namespace":           optBool("Create the namespace the release installs into (`target_namespace`, else `namespace`) if it does not exist."),
					"disable_hooks":              optBool("Skip the chart's install hooks."),
					"disable_openapi_validation": optBool("Do not validate rendered objects against the OpenAPI schema."),
					"disable_schema_validation":  disableSchemaValidation("install"),
					"disable_wait":               optBool("Do not wait for the objects to be ready."),
					"disable_wait_for_jobs":      optBool("Do not wait for Jobs to complete."),
					"server_side_apply": schema.BoolAttribute{Optional: true,
						MarkdownDescription: "Install with server-side apply (Helm 4, helm-controller 1.5+): the release's fields belong to " +
							"the provider's `field_manager` through an Apply entry, and Helm records `apply_method: ssa`. Default true, " +
							"or false with the provider's `helm3_defaults`. Later upgrades keep the method (`upgrade.server_side_apply = \"auto\"`)."},
				},
				Blocks: map[string]schema.Block{
					"strategy": actionStrategyBlock("install"),
					"remediation": schema.SingleNestedBlock{
						Description: "What happens after a failed install: uninstall, then retry.",
						Attributes: map[string]schema.Attribute{
							"retries":                optInt("Retries after a failed install; negative retries forever (within the apply's time). Default 0."),
							"ignore_test_failures":   optBool("Do not remediate failed tests. Default: `test.ignore_failures`."),
							"remediate_last_failure": optBool("Remediate the last failure when retries are exhausted. Default false."),
						},
					},
				},
			},
			"upgrade": schema.SingleNestedBlock{
				Description: "Upgrade options.",
				Attributes: map[string]schema.Attribute{
					"timeout": duration("Timeout of the upgrade. Default: `timeout`."),
					"crds": schema.StringAttribute{Optional: true, Validators: []validator.String{crdPolicy},
						Description: "CRDs in the chart's crds/: `Skip` (default), `Create` or `CreateReplace`."},
					"take_ownership":             takeOwnershipAttr("upgrade"),
					"cleanup_on_fail":            optBool("Delete objects this upgrade created when it fails."),
					"disable_hooks":              optBool("Skip the chart's upgrade hooks."),
					"disable_openapi_validation": optBool("Do not validate rendered objects against the OpenAPI schema."),
					"disable_schema_validation":  disableSchemaValidation("upgrade"),
					"chart_name_change_strategy": chartNameChangeStrategyAttribute(),
					"disable_wait":               optBool("Do not wait for the objects to be ready."),
					"disable_wait_for_jobs":      optBool("Do not wait for Jobs to complete."),
					"force": optBool("Under client-side apply, replace objects (delete and create) where a patch fails. Under server-side " +
						"apply, which always forces field conflicts as helm-controller does, it changes nothing more."),
					"preserve_values":   optBool("Reuse the previous release's values, merged under the new ones."),
					"server_side_apply": ssaMode("upgrade", "the latest revision"),
				},
				Blocks: map[string]schema.Block{
					"strategy": actionStrategyBlock("upgrade"),
					"remediation": schema.SingleNestedBlock{
						Description: "What happens after a failed upgrade: roll back (or uninstall), then retry.",
						Attributes: map[string]schema.Attribute{
							"retries": optInt("Retries after a failed upgrade; negative retries forever (within the apply's time). Default 0."),
							"strategy": schema.StringAttribute{Optional: true, Validators: []validator.String{stringvalidator.OneOf("rollback", "uninstall")},
								Description: "`rollback` (default) to the last successful release, or `uninstall`."},
							"ignore_test_failures":   optBool("Do not remediate failed tests. Default: `test.ignore_failures`."),
							"remediate_last_failure": optBool("Remediate the last failure when retries are exhausted. Default: true when `retries` > 0."),
						},
					},
				},
			},
			"test": schema.SingleNestedBlock{
				Description: "Helm tests run after every install and upgrade.",
				Attributes: map[string]schema.Attribute{
					"enable":          optBool("Run the chart's test hooks."),
					"ignore_failures": optBool("A failed test does not fail the release nor trigger remediation."),
					"timeout":         duration("Timeout of the tests. Default: `timeout`."),
				},
				Blocks: map[string]schema.Block{
					"filters": schema.ListNestedBlock{
						Description: "Which test hooks run: without filters all; `exclude = true` drops the named hook, otherwise only named hooks run.",
						NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
							"name":    schema.StringAttribute{Required: true, Description: "Name of the test hook."},
							"exclude": optBool("Exclude the hook instead of selecting it."),
						}},
					},
				},
			},
			"rollback": schema.SingleNestedBlock{
				Description: "Options of the rollback that remediates a failed upgrade.",
				Attributes: map[string]schema.Attribute{
					"timeout":               duration("Timeout of the rollback. Default: `timeout`."),
					"cleanup_on_fail":       optBool("Delete objects the rollback created when it fails."),
					"disable_hooks":         optBool("Skip the chart's rollback hooks."),
					"disable_wait":          optBool("Do not wait for the objects to be ready."),
					"disable_wait_for_jobs": optBool("Do not wait for Jobs to complete."),
					"force": optBool("Under client-side apply, replace objects (delete and create) where a patch fails. Under server-side " +
						"apply, which always forces field conflicts, it changes nothing more."),
					"server_side_apply": ssaMode("rollback", "the revision it rolls back to"),
					"recreate": func() schema.BoolAttribute {
						a := optBool("Deprecated: no effect. Helm 3 restarted the pods of the rolled back workloads; Helm 4 removed it (helm/helm#31023), and helm-controller 1.5 ignores `.spec.rollback.recreate` too.")
						a.DeprecationMessage = "rollback.recreate has no effect: Helm 4 removed the restart of pods on rollback. Remove the attribute; " +
							"to restart a workload's pods, change an annotation of its pod template (as `kubectl rollout restart` does), e.g. through the chart's values."
						return a
					}(),
				},
			},
			"uninstall": schema.SingleNestedBlock{
				Description: "Options of uninstall (destroy, and install remediation).",
				Attributes: map[string]schema.Attribute{
					"timeout": duration("Timeout of the uninstall. Default: `timeout`."),
					"deletion_propagation": schema.StringAttribute{Optional: true,
						Validators:  []validator.String{stringvalidator.OneOf("background", "foreground", "orphan")},
						Description: "`background` (default), `foreground` or `orphan`."},
					"disable_hooks": optBool("Skip the chart's delete hooks."),
					"disable_wait":  optBool("Do not wait for the objects to be deleted."),
					"keep_history":  optBool("Keep the release's history in storage."),
				},
			},
			"drift_detection": schema.SingleNestedBlock{
				Description: "Drift detection of the release's objects at refresh.",
				Attributes: map[string]schema.Attribute{
					"mode": schema.StringAttribute{Optional: true,
						Validators: []validator.String{stringvalidator.OneOf(driftModeNames()...)},
						Description: "`enabled` (default): drift shows in the plan and apply corrects it; `warn`: the plan warns and changes nothing; " +
							"`disabled`: objects are not compared."},
				},
				Blocks: map[string]schema.Block{
					"ignore": schema.ListNestedBlock{
						Description: "Fields that are not drift. Objects labelled or annotated `helm.toolkit.fluxcd.io/driftDetection: disabled` are never compared.",
						NestedObject: schema.NestedBlockObject{
							Attributes: map[string]schema.Attribute{
								"paths": schema.ListAttribute{Required: true, ElementType: types.StringType,
									Description: "JSON pointers (`/spec/replicas`); `\"\"` ignores the whole object."},
							},
							Blocks: map[string]schema.Block{"target": selectorBlock("Objects the rule applies to; all without it.")},
						},
					},
				},
			},
			"post_renderers": schema.ListNestedBlock{
				Description: "Post-renderers applied in order to the rendered manifest, before the origin labels.",
				NestedObject: schema.NestedBlockObject{Blocks: map[string]schema.Block{
					"kustomize": schema.SingleNestedBlock{
						Description: "Kustomize patches and image overrides, with kustomize's API.",
						Blocks: map[string]schema.Block{
							"patches": schema.ListNestedBlock{
								Description: "Strategic merge or JSON 6902 patches.",
								NestedObject: schema.NestedBlockObject{
									Attributes: map[string]schema.Attribute{
										"patch": schema.StringAttribute{Required: true, Description: "The patch, YAML or JSON."},
									},
									Blocks: map[string]schema.Block{"target": selectorBlock("Objects the patch applies to.")},
								},
							},
							"images": schema.ListNestedBlock{
								Description: "Image overrides.",
								NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
									"name":     schema.StringAttribute{Required: true, Description: "Image name to match."},
									"new_name": schema.StringAttribute{Optional: true, Description: "Replacement name."},
									"new_tag":  schema.StringAttribute{Optional: true, Description: "Replacement tag."},
									"digest":   schema.StringAttribute{Optional: true, Description: "Replacement digest; wins over the tag."},
								}},
							},
						},
					},
				}},
			},
		},
	}
}

func optInt(desc string) schema.Int64Attribute {
	return schema.Int64Attribute{Optional: true, Description: desc}
}

// selectorBlock is kustomize's and Flux's object selector.
func selectorBlock(desc string) schema.SingleNestedBlock {
	s := func(d string) schema.StringAttribute { return schema.StringAttribute{Optional: true, Description: d} }
	return schema.SingleNestedBlock{
		Description: desc,
		Attributes: map[string]schema.Attribute{
			"group":               s("API group; a regular expression."),
			"version":             s("API version; a regular expression."),
			"kind":                s("Kind; a regular expression."),
			"name":                s("Name; a regular expression."),
			"namespace":           s("Namespace; a regular expression."),
			"annotation_selector": s("Annotation selector, as a label selector."),
			"label_selector":      s("Label selector."),
		},
	}
}

var dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// releaseChartBlock is the chart of a release: either the path and digest of a
// stevedore_helmchart_artifact, or the artifact's own source attributes, which
// the release then resolves at plan and fetches at apply itself.
func releaseChartBlock() schema.SingleNestedBlock {
	opt := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Optional: true, Description: desc, Validators: []validator.String{stringvalidator.LengthAtLeast(1)}}
	}
	artifact := helmChartArtifactSchema()
	inline := func(name string) schema.Attribute { return artifact.Attributes[name] }
	attrs := map[string]schema.Attribute{
		"path": schema.StringAttribute{
			Optional: true,
			// Computed: a chart given by digest alone keeps the path the
			// state has (an import records the artifact's), so that
			// neither form plans a change of it (ModifyPlan).
			Computed: true,
			Description: "Path of a chart archive of your own, with its `digest`. Not needed for a `stevedore_helmchart_artifact`: " +
				"`digest` alone finds its archive in the provider's cache, on any machine (a plan saved with `plan -out` and applied " +
				"elsewhere; an import in the plan that creates the artifact). When this machine has no file at `path`, the archive of " +
				"`digest` is taken from the provider's cache too.",
			// Which of path, repository and source_path is set is checked in
			// ValidateConfig (validateReleaseChart): the framework's path
			// expression validators walk the whole configuration once per
			// expression, for every release, on every plan.
			Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
		},
		"digest": schema.StringAttribute{
			Optional:    true,
			Description: "Digest of the chart archive: `stevedore_helmchart_artifact.<name>.digest`. Exactly one of `digest`, `repository` and `source_path`.",
			Validators:  []validator.String{stringvalidator.RegexMatches(regexp.MustCompile(`^sha256:[0-9a-f]{64}$`), "must be sha256:<64 hex digits>")},
		},
		"repository": schema.StringAttribute{
			Optional: true,
			Description: "Inline chart: Helm repository (`https://...`) or OCI repository (`oci://host/path`). The constraint is " +
				"resolved and the chart fetched, packaged and verified into the provider's cache at plan (once per version), so the " +
				"plan shows the chart version and digest apply installs.",
			Validators: []validator.String{stringvalidator.RegexMatches(regexp.MustCompile(`^(https?|oci)://[^\s]+$`), "must be an http://, https:// or oci:// URL")},
		},
		"source_path": opt("Inline chart: a local chart directory."),
		"chart":       opt("Inline chart: the chart's name in `repository`."),
		"version": schema.StringAttribute{Optional: true, Description: "Inline chart: semver constraint; default `*`, the highest stable version.",
			Validators: []validator.String{constraintValidator{}}},
		"values_files":                inline("values_files"),
		"ignore_missing_values_files": schema.BoolAttribute{Optional: true, Description: "Inline chart: skip values files that do not exist."},
		"reconcile_strategy": schema.StringAttribute{Optional: true,
			Description: "Inline chart from `source_path`: `ChartVersion` (default) or `Revision`.",
			Validators:  []validator.String{stringvalidator.OneOf("ChartVersion", "Revision")}},
	}
	for _, name := range []string{"username", "password", "ca_pem", "cert_pem", "key_pem", "insecure_skip_tls_verify", "insecure", "pass_credentials"} {
		attrs[name] = inline(name)
	}
	verify := artifact.Blocks["verify"].(schema.SingleNestedBlock)
	return schema.SingleNestedBlock{
		Description: "The chart: `path` and `digest` of a `stevedore_helmchart_artifact`, or an inline chart with the artifact's source " +
			"attributes (`repository`, `chart`, `version`, `verify`, ...). A new digest, or a new version in range of an inline chart, " +
			"upgrades the release; a new chart name replaces it (`upgrade.chart_name_change_strategy`).",
		Validators: []validator.Object{objectvalidator.IsRequired()},
		Attributes: attrs,
		Blocks:     map[string]schema.Block{"verify": verify},
	}
}

// driftModeNames are release.DriftModes as the validator wants them.
func driftModeNames() []string {
	out := make([]string, len(release.DriftModes))
	for i, m := range release.DriftModes {
		out[i] = string(m)
	}
	return out
}
