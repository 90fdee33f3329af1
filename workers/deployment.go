package workers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Deployment is the Worker Deployment version a worker belongs to
// (Temporal's worker versioning). Every build of replyflow on a namespace
// is one version of one deployment; the server sends a session's tasks to
// the workers of the deployment's current version. Sessions are
// auto-upgrade: when an operator makes a new version current, every open
// session moves to it at its next workflow task, which is why a change to
// what the session workflow does ships as a new release of it, a new
// workflow type (workflows/releases.go). The deprecated build-ID options
// are not used.
type Deployment struct {
	// Name is the deployment (REPLYFLOW_DEPLOYMENT_NAME); "" runs the
	// worker unversioned, taking the tasks of no deployment's version.
	Name string
	// BuildID names this build within the deployment (REPLYFLOW_BUILD_ID,
	// else DefaultBuildID).
	BuildID string
	// Promote says when this worker makes its own version current.
	Promote Promote
}

// Promote is when a worker makes its own version the deployment's current
// one (REPLYFLOW_PROMOTE).
type Promote string

const (
	// PromoteFirst makes it current only when the deployment never had a
	// current version: the first deploy on a new namespace works by
	// itself, and every later version waits for an operator
	// (docs/upgrading.md).
	PromoteFirst Promote = "first"
	// PromoteAlways makes it current as soon as the version is registered:
	// the newest worker to start takes every session (a single host that
	// restarts on upgrade, `replyflow dev`).
	PromoteAlways Promote = "always"
	// PromoteNever leaves the current version to operators.
	PromoteNever Promote = "never"
)

// ParsePromote reads REPLYFLOW_PROMOTE.
func ParsePromote(s string) (Promote, error) {
	switch p := Promote(s); p {
	case PromoteFirst, PromoteAlways, PromoteNever:
		return p, nil
	}
	return "", fmt.Errorf("REPLYFLOW_PROMOTE must be first, always or never, got %q", s)
}

// Versioned says whether the worker registers with a deployment.
func (d Deployment) Versioned() bool { return d.Name != "" }

// Validate checks what the server would refuse later, at the first poll.
func (d Deployment) Validate() error {
	if !d.Versioned() {
		return nil
	}
	if strings.Contains(d.Name, ".") {
		return fmt.Errorf("REPLYFLOW_DEPLOYMENT_NAME %q must not contain '.' (Temporal reserves it)", d.Name)
	}
	if d.BuildID == "" || strings.HasPrefix(d.BuildID, "__") || len(d.BuildID) > 255 {
		return fmt.Errorf("the build ID %q must be 1 to 255 characters and not start with __ (REPLYFLOW_BUILD_ID)", d.BuildID)
	}
	return nil
}

func (d Deployment) version() worker.WorkerDeploymentVersion {
	return worker.WorkerDeploymentVersion{DeploymentName: d.Name, BuildID: d.BuildID}
}

// options are the worker's deployment options: every workflow it runs is
// auto-upgrade (a session lives for days; pinning it to the build it
// started on would keep every old build running as long as its sessions).
func (d Deployment) options() worker.DeploymentOptions {
	if !d.Versioned() {
		return worker.DeploymentOptions{}
	}
	return worker.DeploymentOptions{
		UseVersioning:             true,
		Version:                   d.version(),
		DefaultVersioningBehavior: workflow.VersioningBehaviorAutoUpgrade,
	}
}

// String is "<deployment>:<build>" as `temporal worker deployment` prints
// it, or "unversioned".
func (d Deployment) String() string {
	if !d.Versioned() {
		return "unversioned"
	}
	return d.Name + ":" + d.BuildID
}

// DefaultBuildID is the build ID of this binary when REPLYFLOW_BUILD_ID
// is not set: its VCS revision (12 characters, the way `git log --oneline`
// shows it), with "-dirty-" and a hash of the executable when the tree
// had changes (two different dirty builds must not share a version); a
// binary built without VCS information (go run, go test) is named by the
// hash of its executable alone.
func DefaultBuildID() (string, error) {
	var revision string
	var modified bool
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if revision != "" && !modified {
		return revision[:min(12, len(revision))], nil
	}
	sum, err := executableHash()
	if err != nil {
		return "", fmt.Errorf("name this build (set REPLYFLOW_BUILD_ID): %w", err)
	}
	if revision != "" {
		return revision[:min(12, len(revision))] + "-dirty-" + sum, nil
	}
	return "exe-" + sum, nil
}

func executableHash() (string, error) {
	path, err := os.Executable()
	if err != nil {
		return "", err
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

// promoteRetry paces the promotion: the version exists only once a
// poller of this worker reached the server, and a busy deployment refuses
// a change while another is under way.
const (
	promoteRetry    = time.Second
	promoteRetryMax = 15 * time.Second
	// promoteWithin bounds the attempt; past it the worker keeps running
	// and says what an operator should do.
	promoteWithin = 5 * time.Minute
)

// PromoteWhenRegistered makes d's version current when d.Promote says so,
// once the server knows the version (after the worker's first poll). It
// returns when done, when the policy leaves it to an operator (saying so
// in the log), or when ctx ends.
func PromoteWhenRegistered(ctx context.Context, c client.Client, d Deployment, logger *slog.Logger) {
	if !d.Versioned() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, promoteWithin)
	defer cancel()
	handle := c.WorkerDeploymentClient().GetHandle(d.Name)
	wait := promoteRetry
	var lastErr error
	for {
		done, err := promoteOnce(ctx, handle, d, logger)
		if done {
			return
		}
		lastErr = err
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				logger.Error("This worker could not make its version current; it takes no session until an operator does",
					"version", d.String(), "error", lastErr, "fix", setCurrentCommand(d))
			}
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, promoteRetryMax)
	}
}

// promoteOnce looks at the deployment once and acts on it; done says
// there is nothing more to do.
func promoteOnce(ctx context.Context, handle client.WorkerDeploymentHandle, d Deployment, logger *slog.Logger) (bool, error) {
	desc, err := handle.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return false, fmt.Errorf("the deployment is not registered yet: %w", err)
	}
	if err != nil {
		return false, err
	}
	routing := desc.Info.RoutingConfig
	current := "unversioned workers"
	if v := routing.CurrentVersion; v != nil {
		if v.BuildID == d.BuildID {
			logger.Info("This worker's version is current: it takes every session", "version", d.String())
			return true, nil
		}
		current = v.DeploymentName + ":" + v.BuildID
	}
	neverCurrent := routing.CurrentVersion == nil && routing.CurrentVersionChangedTime.IsZero()
	if d.Promote == PromoteNever || (d.Promote == PromoteFirst && !neverCurrent) {
		logger.Warn("This worker's version is not current: it takes no session until an operator makes it current (docs/upgrading.md)",
			"version", d.String(), "current", current, "promote", string(d.Promote), "make_current", setCurrentCommand(d))
		return true, nil
	}
	if !registered(desc, d.BuildID) {
		return false, errors.New("the version is not registered yet (no poll of this worker reached the server)")
	}
	if _, err := handle.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{
		BuildID:       d.BuildID,
		ConflictToken: desc.ConflictToken,
	}); err != nil {
		return false, err
	}
	logger.Info("This worker made its version current: every session moves to it at its next task",
		"version", d.String(), "previous", current, "promote", string(d.Promote))
	return true, nil
}

func registered(desc client.WorkerDeploymentDescribeResponse, buildID string) bool {
	for _, v := range desc.Info.VersionSummaries {
		if v.Version.BuildID == buildID {
			return true
		}
	}
	return false
}

func setCurrentCommand(d Deployment) string {
	return fmt.Sprintf("temporal worker deployment set-current-version --deployment-name %s --build-id %s", d.Name, d.BuildID)
}

// TakesSessions is a readiness check: nil while d's version is the
// deployment's current or ramping one (or the worker is unversioned),
// else what an operator should do. In a rolling update of an
// orchestrator that waits for readiness, new workers stay unready, and the
// old ones serve, until an operator makes the new version current. Each
// call asks the server once.
func TakesSessions(c client.Client, d Deployment) func(context.Context) error {
	return func(ctx context.Context) error {
		if !d.Versioned() {
			return nil
		}
		desc, err := c.WorkerDeploymentClient().GetHandle(d.Name).Describe(ctx, client.WorkerDeploymentDescribeOptions{})
		if err != nil {
			return fmt.Errorf("describe the worker deployment %s: %w", d.Name, err)
		}
		routing := desc.Info.RoutingConfig
		for _, v := range []*worker.WorkerDeploymentVersion{routing.CurrentVersion, routing.RampingVersion} {
			if v != nil && v.BuildID == d.BuildID {
				return nil
			}
		}
		return fmt.Errorf("version %s is neither current nor ramping, so it takes no session: %s", d, setCurrentCommand(d))
	}
}
