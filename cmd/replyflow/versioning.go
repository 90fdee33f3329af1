package main

import (
	"errors"
	"fmt"

	"github.com/replyflow/replyflow/workers"
)

// deployment is the Worker Deployment version this process's worker
// serves: REPLYFLOW_DEPLOYMENT_NAME and REPLYFLOW_BUILD_ID (else the
// binary's own, workers.DefaultBuildID), or unversioned with
// REPLYFLOW_WORKER_VERSIONING=false.
func (c Config) deployment() (workers.Deployment, error) {
	if !c.WorkerVersioning {
		return workers.Deployment{}, nil
	}
	promote, err := workers.ParsePromote(c.Promote)
	if err != nil {
		return workers.Deployment{}, err
	}
	d := workers.Deployment{Name: c.DeploymentName, BuildID: c.BuildID, Promote: promote}
	if d.BuildID == "" {
		if d.BuildID, err = workers.DefaultBuildID(); err != nil {
			return workers.Deployment{}, err
		}
	}
	return d, d.Validate()
}

// checkDeployment is validate's part: what the worker would refuse.
func (c Config) checkDeployment() error {
	if !c.WorkerVersioning {
		return nil
	}
	if c.DeploymentName == "" {
		return errors.New("REPLYFLOW_DEPLOYMENT_NAME must not be empty with REPLYFLOW_WORKER_VERSIONING=true (set REPLYFLOW_WORKER_VERSIONING=false to run unversioned)")
	}
	if _, err := c.deployment(); err != nil {
		return fmt.Errorf("worker versioning: %w", err)
	}
	return nil
}
