package release

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// How much of a failed test hook's log a failure carries, per container:
// the last MaxHookLogLines lines, and of those at most MaxHookLogBytes bytes
// (truncateLog). The resource's apply and the test action fail with the same
// text: both come from the one test runner.
const (
	MaxHookLogLines = 50
	MaxHookLogBytes = 4096
	// hookLogsTimeout bounds the reads of the logs of one test run: the
	// logs explain a failure, they must not hold it up.
	hookLogsTimeout = 30 * time.Second
)

// failedHookLogs is the log of every container of each test hook Pod that
// failed in the run that started at since, each truncated (truncateLog) and
// headed by the Pod and container it is from; a log that cannot be read says
// why in its place. "" when no Pod hook failed, or for Helm's fake clients
// (the runners' tests), which have no Pods to read.
func failedHookLogs(ctx context.Context, sess *session, rls *helmrelease.Release, since time.Time) string {
	var failed []*helmrelease.Hook
	for _, h := range rls.Hooks {
		if isTestHook(h) && h.Kind == "Pod" && h.LastRun.Phase == helmrelease.HookPhaseFailed && !h.LastRun.StartedAt.Before(since) {
			failed = append(failed, h)
		}
	}
	if len(failed) == 0 || sess.kubeClient != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, hookLogsTimeout)
	defer cancel()
	var b strings.Builder
	cs, err := sess.clientset()
	for _, h := range failed {
		pod := rls.Namespace + "/" + h.Name
		if err != nil {
			fmt.Fprintf(&b, "logs of test pod %s: unavailable: %v\n", pod, err)
			continue
		}
		writePodLogs(ctx, &b, cs, rls.Namespace, h.Name)
	}
	return strings.TrimRight(b.String(), "\n")
}

// writePodLogs writes the truncated log of each container of the Pod
// namespace/name into b, init containers first, as `helm test --logs` does.
func writePodLogs(ctx context.Context, b *strings.Builder, cs kubernetes.Interface, namespace, name string) {
	pod, err := cs.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		fmt.Fprintf(b, "logs of test pod %s/%s: unavailable: %v\n", namespace, name, err)
		return
	}
	tail := int64(MaxHookLogLines)
	for _, c := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		raw, err := cs.CoreV1().Pods(namespace).GetLogs(name, &corev1.PodLogOptions{Container: c.Name, TailLines: &tail}).DoRaw(ctx)
		if err != nil {
			fmt.Fprintf(b, "logs of test pod %s/%s, container %s: unavailable: %v\n", namespace, name, c.Name, err)
			continue
		}
		text, cut := truncateLog(string(raw), MaxHookLogLines, MaxHookLogBytes)
		note := ""
		if cut {
			note = fmt.Sprintf(" (its last %d lines, at most %d bytes)", MaxHookLogLines, MaxHookLogBytes)
		}
		fmt.Fprintf(b, "logs of test pod %s/%s, container %s%s:\n%s\n", namespace, name, c.Name, note, strings.TrimRight(text, "\n"))
	}
}

// truncateLog is the end of log: its last maxLines lines, and of those the
// last that fit in maxBytes, whole lines only unless the last line alone is
// longer (then its last bytes, from a character boundary). cut says whether
// anything was left out.
func truncateLog(log string, maxLines, maxBytes int) (out string, cut bool) {
	body := strings.TrimSuffix(log, "\n")
	lines := strings.Split(body, "\n")
	if body == "" {
		return "", false
	}
	if len(lines) > maxLines {
		lines, cut = lines[len(lines)-maxLines:], true
	}
	size := 0
	start := len(lines)
	for start > 0 {
		n := len(lines[start-1])
		if start < len(lines) {
			n++ // the newline after it
		}
		if size+n > maxBytes {
			break
		}
		size += n
		start--
	}
	if start == len(lines) {
		// The last line alone is longer than maxBytes.
		last := lines[len(lines)-1]
		i := len(last) - maxBytes
		for i < len(last) && !utf8.RuneStart(last[i]) {
			i++
		}
		return last[i:], true
	}
	if start > 0 {
		cut = true
	}
	return strings.Join(lines[start:], "\n"), cut
}

// clientset is a Kubernetes clientset of the session's acting factory (the
// service account's, when one is impersonated).
func (s *session) clientset() (kubernetes.Interface, error) {
	rc, err := s.f.RESTConfig()
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return cs, nil
}
