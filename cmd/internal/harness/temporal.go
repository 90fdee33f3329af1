package harness

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/cmd/internal/devserver"
	"github.com/replyflow/replyflow/workers/codec"
)

// Temporal is a dev server on its own database file, so that it can be
// killed and started again with everything it held.
type Temporal struct {
	*Proc
	Address string
}

// StartTemporal runs `temporal server start-dev` on a free port with the
// database at dbFile (in memory when empty) and replyflow's flags (see
// devserver), and waits until it answers.
func StartTemporal(ctx context.Context, cli, dbFile, log string, extraArgs ...string) (*Temporal, error) {
	// Ports are picked free, then bound by the server a moment later; in
	// between another process (or the server itself, which picks its HTTP
	// port the same way) may take one. Such a start fails at once with
	// "address already in use", and is tried again on other ports.
	var lastErr error
	for range 3 {
		t, err := startTemporalOnce(ctx, cli, dbFile, log, extraArgs)
		if err == nil {
			return t, nil
		}
		lastErr = err
		if !strings.Contains(err.Error(), "address already in use") {
			return nil, err
		}
		t.Stop()
	}
	return nil, lastErr
}

func startTemporalOnce(ctx context.Context, cli, dbFile, log string, extraArgs []string) (*Temporal, error) {
	ports, err := FreePorts(2)
	if err != nil {
		return nil, err
	}
	port, httpPort := ports[0], ports[1]
	// The HTTP port is named too, so a restart after a kill binds the
	// same two ports instead of drawing a new one that may be taken.
	args := []string{"server", "start-dev", "--ip", "127.0.0.1", "--port", strconv.Itoa(port),
		"--http-port", strconv.Itoa(httpPort), "--headless", "--log-level", "error", "--namespace", "default"}
	if dbFile != "" {
		args = append(args, "--db-filename", dbFile)
	}
	args = append(args, devserver.Args()...)
	args = append(args, extraArgs...)
	t := &Temporal{Proc: NewProc("temporal", cli, args, nil, log), Address: "127.0.0.1:" + strconv.Itoa(port)}
	return t, t.Restart(ctx)
}

// Restart starts the server (again) and waits until it answers.
func (t *Temporal) Restart(ctx context.Context) error {
	if err := t.Start(); err != nil {
		return err
	}
	return t.WaitReady(ctx)
}

// WaitReady waits, up to a minute, until the server answers a health
// check.
func (t *Temporal) WaitReady(ctx context.Context) error {
	return waitForFrontend(ctx, t.Address, t.Proc, time.Minute)
}

// quietLogger drops the SDK's logs; the programs print their own.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}

// Dial connects to the server quietly. With codecKeys (in
// REPLYFLOW_CODEC_KEYS's format, "" for none) it encrypts and decrypts
// payloads as a replyflow given the same keys does.
func Dial(ctx context.Context, address, codecKeys string) (client.Client, error) {
	opts := client.Options{HostPort: address, Namespace: "default", Logger: quietLogger{}}
	if codecKeys != "" {
		keys, err := codec.ParseKeys(codecKeys)
		if err != nil {
			return nil, err
		}
		if err := codec.SetOn(&opts, keys, false); err != nil {
			return nil, err
		}
	}
	return client.DialContext(ctx, opts)
}

// AwaitCurrentVersion waits, up to a minute, until the Worker Deployment
// has a current version, buildID when not empty: the first worker makes
// its own version current once its first poll registered it
// (REPLYFLOW_PROMOTE=first), and until then a new session's first task
// waits for unversioned workers. Start the gateways after this, as
// docs/deploy.md's first deploy does. "replyflow" is the workers' default
// deployment (REPLYFLOW_DEPLOYMENT_NAME).
func AwaitCurrentVersion(ctx context.Context, c client.Client, deployment, buildID string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	handle := c.WorkerDeploymentClient().GetHandle(deployment)
	for {
		desc, err := handle.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
		if current := desc.Info.RoutingConfig.CurrentVersion; err == nil && current != nil && (buildID == "" || current.BuildID == buildID) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no version %q of the worker deployment %s became current within a minute (the workers' logs say why): %v", buildID, deployment, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
