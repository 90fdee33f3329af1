package workflows

import (
	"os/exec"
	"strings"
	"testing"
)

// TestWorkflowsImportNoSideEffectCode keeps the workflow deterministic by
// construction: nothing it depends on may reach a platform, a model, the
// adapters or the activities.
func TestWorkflowsImportNoSideEffectCode(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{
		"github.com/replyflow/replyflow/adapters",
		"github.com/replyflow/replyflow/activities",
		"github.com/replyflow/replyflow/workers",
		"github.com/slack-go/",
		"github.com/bwmarrin/discordgo",
		"github.com/go-telegram/",
		"github.com/openai/",
		"github.com/anthropics/",
		"github.com/jackc/pgx",
		"github.com/lib/pq",
		"modernc.org/sqlite",
		"github.com/mattn/go-sqlite3",
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				t.Errorf("a package under workflows depends on %s; workflow code must stay free of side-effect code", dep)
			}
		}
	}
}
