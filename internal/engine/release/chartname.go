package release

import (
	"fmt"
	"slices"
)

// Chart name change strategies: helm-controller 1.6's
// upgrade.chartNameChangeStrategy, what happens when the release's chart is
// replaced by a chart of another name (Chart.yaml's `name`).
const (
	// ChartNameReinstall uninstalls the release and installs it again with
	// the new chart (the default; helm-controller since Flux 2.2). In
	// Terraform that is a replacement of the resource.
	ChartNameReinstall = "Reinstall"
	// ChartNameInPlaceUpdate upgrades the release in place: a new revision
	// of the same release, with the new chart.
	ChartNameInPlaceUpdate = "InPlaceUpdate"
)

// ChartNameChangeStrategies are the valid strategies, for validators and
// messages.
var ChartNameChangeStrategies = []string{ChartNameReinstall, ChartNameInPlaceUpdate}

// ChartNameChange is what a change of the chart's name does to the release.
type ChartNameChange int

const (
	// ChartNameUnchanged: the chart keeps its name (or either name is not
	// known): nothing to decide.
	ChartNameUnchanged ChartNameChange = iota
	// ChartNameReinstalls: the release is uninstalled and installed again
	// (a replacement).
	ChartNameReinstalls
	// ChartNameUpgradesInPlace: the release is upgraded to the new chart.
	ChartNameUpgradesInPlace
)

// DecideChartNameChange is what a release whose latest revision has the chart
// named from does when given the chart named to, under strategy (as the user
// wrote it: empty is the default, ChartNameReinstall), as helm-controller's
// ReleaseTargetChanged and GetChartNameChangeStrategy decide it. An empty
// name (no release yet, or a chart not known at plan) changes nothing.
func DecideChartNameChange(strategy, from, to string) ChartNameChange {
	if from == "" || to == "" || from == to {
		return ChartNameUnchanged
	}
	if strategy == ChartNameInPlaceUpdate {
		return ChartNameUpgradesInPlace
	}
	return ChartNameReinstalls
}

// Sentence says what the change does, for the plan's warning.
func (c ChartNameChange) Sentence(from, to string) string {
	switch c {
	case ChartNameReinstalls:
		return fmt.Sprintf("the chart's name changes from %q to %q: upgrade.chart_name_change_strategy is %s, so the release is "+
			"uninstalled and installed again (a replacement: its objects are deleted and created, its history starts over); "+
			"set it to %s to upgrade the release in place", from, to, ChartNameReinstall, ChartNameInPlaceUpdate)
	case ChartNameUpgradesInPlace:
		return fmt.Sprintf("the chart's name changes from %q to %q: upgrade.chart_name_change_strategy is %s, so the release is "+
			"upgraded in place (a new revision of the same release, its objects updated, its history kept)", from, to, ChartNameInPlaceUpdate)
	}
	return ""
}

// validChartNameChangeStrategy says whether s is unset or a known strategy.
func validChartNameChangeStrategy(s string) bool {
	return s == "" || slices.Contains(ChartNameChangeStrategies, s)
}

// ChartNameChangeError refuses, at apply, an upgrade to a chart of another
// name that the strategy says to reinstall: the plan could not see the new
// chart's name (its archive was not known yet), so it planned an update where
// a replacement was due. Nothing is done; the next plan, which knows the
// chart, plans the replacement.
type ChartNameChangeError struct {
	From, To string
}

func (e *ChartNameChangeError) Error() string {
	return fmt.Sprintf("the chart's name changed from %q to %q, which the plan could not see (the chart was not known yet): "+
		"upgrade.chart_name_change_strategy is %s, which replaces the release, not an in-place upgrade. Nothing was done: "+
		"plan and apply again (the plan now shows the replacement), or set it to %s", e.From, e.To, ChartNameReinstall, ChartNameInPlaceUpdate)
}

// AttributePath names the attribute the error is about.
func (e *ChartNameChangeError) AttributePath() string { return "upgrade.chart_name_change_strategy" }

// Summary is the diagnostic's summary.
func (e *ChartNameChangeError) Summary() string { return "Chart name changed after the plan" }

// checkChartNameChange refuses, before anything is done, an in-place upgrade
// from the release the last apply left (prev) to a chart of another name
// when the spec's strategy says to reinstall. spec has its defaults.
func checkChartNameChange(spec *Spec, prev *Status, chartName string) error {
	if prev == nil {
		return nil // a create: no release to change
	}
	if DecideChartNameChange(spec.Upgrade.ChartNameChangeStrategy, prev.ChartName, chartName) == ChartNameReinstalls {
		return &ChartNameChangeError{From: prev.ChartName, To: chartName}
	}
	return nil
}
