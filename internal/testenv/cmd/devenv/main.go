// Command devenv is what `make demo` and `make demo-down` run: it starts a local
// cluster (kwokctl, binary runtime) and a Helm chart server, then applies
// examples/quickstart with OpenTofu and the provider built into ./bin through a
// dev override; `down` removes all of it. State lives in .demo/ at the
// repository root.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

type state struct {
	ClusterName    string `json:"cluster_name"`
	ClusterWorkdir string `json:"cluster_workdir"`
	Kubeconfig     string `json:"kubeconfig"`
	ChartServerPID int    `json:"chart_server_pid"`
	ChartRepoURL   string `json:"chart_repo_url"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: devenv up|down")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "up":
		err = up()
	case "down":
		err = down()
	case "serve-charts":
		err = serveCharts(os.Args[2])
	default:
		err = fmt.Errorf("unknown command %q: want up or down", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "devenv:", err)
		os.Exit(1)
	}
}

func demoDir() string   { return filepath.Join(testenv.RepoRoot(), ".demo") }
func statePath() string { return filepath.Join(demoDir(), "state.json") }

func loadState() (*state, error) {
	b, err := os.ReadFile(statePath())
	if err != nil {
		return nil, err
	}
	var s state
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", statePath(), err)
	}
	return &s, nil
}

func saveState(s *state) error {
	b, _ := json.MarshalIndent(s, "", "  ")
	return os.WriteFile(statePath(), b, 0o600)
}

func up() error {
	bin := testenv.BinDir()
	if err := os.MkdirAll(demoDir(), 0o755); err != nil {
		return err
	}
	s, err := loadState()
	switch {
	case err == nil:
		fmt.Printf("Reusing the demo cluster %s (make demo-down removes it).\n", s.ClusterName)
	case errors.Is(err, os.ErrNotExist):
		s = &state{}
		fmt.Println("Starting a local cluster (etcd, kube-apiserver, controller-manager, scheduler, kwok)...")
		start := time.Now()
		cl, err := testenv.StartCluster(context.Background(), testenv.ClusterOptions{
			Workdir:    filepath.Join(demoDir(), "cluster"),
			Persistent: true,
		})
		if err != nil {
			return err
		}
		s.ClusterName, s.ClusterWorkdir, s.Kubeconfig = cl.Name, cl.Workdir(), cl.Kubeconfig
		if err := saveState(s); err != nil {
			return err
		}
		fmt.Printf("Cluster %s is up (%.1fs), with two fake nodes.\n", cl.Name, time.Since(start).Seconds())
	default:
		return err
	}

	if s.ChartServerPID == 0 || !alive(s.ChartServerPID) {
		pid, url, err := startChartServer()
		if err != nil {
			return err
		}
		s.ChartServerPID, s.ChartRepoURL = pid, url
		if err := saveState(s); err != nil {
			return err
		}
	}
	fmt.Printf("Helm repository with the podinfo test chart: %s\n", s.ChartRepoURL)

	work := filepath.Join(demoDir(), "quickstart")
	if err := copyDir(filepath.Join(testenv.RepoRoot(), "examples", "quickstart"), work); err != nil {
		return err
	}
	tfvars := fmt.Sprintf("kubeconfig = %q\nchart_repository = %q\n", s.Kubeconfig, s.ChartRepoURL)
	if err := os.WriteFile(filepath.Join(work, "demo.auto.tfvars"), []byte(tfvars), 0o644); err != nil {
		return err
	}
	rc := filepath.Join(demoDir(), "tofurc")
	override := fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"stevedore-dev/stevedore\" = %q\n  }\n  direct {}\n}\n", bin)
	if err := os.WriteFile(rc, []byte(override), 0o644); err != nil {
		return err
	}

	fmt.Println("\nApplying examples/quickstart with OpenTofu and the provider in ./bin (dev override, no init needed):")
	tofu := exec.Command(filepath.Join(bin, "tofu"), "apply", "-auto-approve", "-input=false")
	tofu.Dir = work
	tofu.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "CHECKPOINT_DISABLE=1")
	tofu.Stdout, tofu.Stderr = os.Stdout, os.Stderr
	if err := tofu.Run(); err != nil {
		return fmt.Errorf("tofu apply: %w", err)
	}

	fmt.Println("\nA plan that changes a value: `changes` shows what the upgrade will do to each object, found by dry runs:")
	plan := exec.Command(filepath.Join(bin, "tofu"), "plan", "-input=false", "-var", "greeting=hello again")
	plan.Dir, plan.Env = work, tofu.Env
	plan.Stdout, plan.Stderr = os.Stdout, os.Stderr
	if err := plan.Run(); err != nil {
		return fmt.Errorf("tofu plan: %w", err)
	}

	kubectl := filepath.Join(bin, "kubectl")
	fmt.Printf(`
The demo is up. Look at it with the kubectl that make built:

  export KUBECONFIG=%s
  %s get nodes
  %s get all -A
  %s -n team-a scale deployment web --replicas 3   # drift: the next plan shows it, apply restores it
  %s -n default scale deployment podinfo --replicas 5   # release drift: plan shows drift -> [], apply corrects it

Plan again (it should be empty), or edit %s and apply:

  cd %s
  TF_CLI_CONFIG_FILE=%s %s plan

Remove everything with: make demo-down
`, s.Kubeconfig, kubectl, kubectl, kubectl, kubectl, filepath.Join(work, "main.tf"), work, rc, filepath.Join(bin, "tofu"))
	return nil
}

// startChartServer runs this program again as a detached chart server, so that
// it outlives `make demo`, and waits for it to say where it listens.
func startChartServer() (int, string, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, "", err
	}
	urlFile := filepath.Join(demoDir(), "chart-repo.url")
	_ = os.Remove(urlFile)
	logf, err := os.Create(filepath.Join(demoDir(), "chart-server.log"))
	if err != nil {
		return 0, "", err
	}
	defer logf.Close()
	cmd := exec.Command(self, "serve-charts", urlFile)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, "", err
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(urlFile); err == nil && len(b) > 0 {
			return pid, strings.TrimSpace(string(b)), nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return pid, "", fmt.Errorf("chart server did not start; see %s", logf.Name())
}

func serveCharts(urlFile string) error {
	repo, err := testenv.StartHelmRepo(testenv.HelmRepoOptions{})
	if err != nil {
		return err
	}
	defer repo.Close()
	src := filepath.Join(testenv.ChartsDir(), "podinfo")
	for _, v := range []string{"1.0.0", "1.1.0"} {
		if err := repo.PublishDir(src, v); err != nil {
			return err
		}
	}
	if err := os.WriteFile(urlFile, []byte(repo.URL()), 0o644); err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	return nil
}

func down() error {
	s, err := loadState()
	if errors.Is(err, os.ErrNotExist) {
		fmt.Println("No demo is running.")
		return os.RemoveAll(demoDir())
	}
	if err != nil {
		return err
	}
	if s.ChartServerPID != 0 && alive(s.ChartServerPID) {
		_ = syscall.Kill(s.ChartServerPID, syscall.SIGTERM)
	}
	if s.ClusterName != "" {
		testenv.OpenCluster(testenv.BinDir(), s.ClusterName, s.ClusterWorkdir).Stop()
		fmt.Printf("Cluster %s deleted.\n", s.ClusterName)
	}
	return os.RemoveAll(demoDir())
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	// /proc/<pid>/cmdline tells a live chart server from a recycled pid.
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return err == nil && strings.Contains(string(b), "serve-charts")
}

// copyDir copies the configuration files of src into dst, leaving Terraform's
// own files in dst (state, .terraform) alone.
func copyDir(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		in, err := os.Open(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		out, err := os.Create(filepath.Join(dst, e.Name()))
		if err != nil {
			in.Close()
			return err
		}
		_, err = io.Copy(out, in)
		in.Close()
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}
