package workers

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

func TestParsePromoteTakesTheThreePoliciesOnly(t *testing.T) {
	for _, s := range []string{"first", "always", "never"} {
		p, err := ParsePromote(s)
		require.NoError(t, err)
		assert.Equal(t, Promote(s), p)
	}
	for _, s := range []string{"", "First", "auto"} {
		_, err := ParsePromote(s)
		assert.ErrorContains(t, err, "REPLYFLOW_PROMOTE", s)
	}
}

func TestDeploymentValidateRefusesWhatTheServerWould(t *testing.T) {
	assert.NoError(t, Deployment{}.Validate(), "unversioned needs nothing")
	assert.NoError(t, Deployment{Name: "replyflow", BuildID: "abc123"}.Validate())
	assert.ErrorContains(t, Deployment{Name: "reply.flow", BuildID: "a"}.Validate(), "'.'")
	assert.ErrorContains(t, Deployment{Name: "replyflow"}.Validate(), "build ID")
	assert.ErrorContains(t, Deployment{Name: "replyflow", BuildID: "__internal"}.Validate(), "build ID")
	assert.ErrorContains(t, Deployment{Name: "replyflow", BuildID: strings.Repeat("b", 256)}.Validate(), "build ID")
}

func TestDeploymentOptionsMakeEverySessionAutoUpgrade(t *testing.T) {
	assert.False(t, Deployment{}.options().UseVersioning)
	opts := Deployment{Name: "replyflow", BuildID: "b1"}.options()
	assert.True(t, opts.UseVersioning)
	assert.Equal(t, "replyflow", opts.Version.DeploymentName)
	assert.Equal(t, "b1", opts.Version.BuildID)
	assert.Equal(t, workflow.VersioningBehaviorAutoUpgrade, opts.DefaultVersioningBehavior)
	assert.Equal(t, "replyflow:b1", Deployment{Name: "replyflow", BuildID: "b1"}.String())
	assert.Equal(t, "unversioned", Deployment{}.String())
}

// A test binary carries no VCS stamp: its build ID is the hash of the
// executable, the same at every call.
func TestDefaultBuildIDNamesTheExecutable(t *testing.T) {
	id, err := DefaultBuildID()
	require.NoError(t, err)
	again, err := DefaultBuildID()
	require.NoError(t, err)
	assert.Equal(t, id, again)
	assert.Regexp(t, `^(exe-[0-9a-f]{12}|[0-9a-f]{12}(-dirty-[0-9a-f]{12})?)$`, id)
	assert.NoError(t, Deployment{Name: "replyflow", BuildID: id}.Validate())
}
