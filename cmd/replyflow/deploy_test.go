package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/replyflow/replyflow/activities"
	"github.com/replyflow/replyflow/gateway"
	"github.com/replyflow/replyflow/workers"
	"github.com/replyflow/replyflow/workers/telemetry"
	"github.com/replyflow/replyflow/workflows"
)

// productionNeeds are the variables a worker and a gateway outside a
// laptop cannot do without: without the store DSN a worker keeps its store
// in the container, and a gateway keeps the web chat's history and the
// files users send in one the workers do not read; without codec keys
// Temporal holds clear text; the web chat's worker and gateway share the
// bot token, the worker must find the gateway, and the gateway signs users
// in with the key and listens beyond loopback.
var productionNeeds = map[string][]string{
	"worker":  {"REPLYFLOW_STORE_DSN", "REPLYFLOW_CODEC_KEYS", "REPLYFLOW_WEBCHAT_BOT_TOKEN", "REPLYFLOW_WEBCHAT_URL"},
	"gateway": {"REPLYFLOW_STORE_DSN", "REPLYFLOW_CODEC_KEYS", "REPLYFLOW_WEBCHAT_BOT_TOKEN", "REPLYFLOW_WEBCHAT_AUTH_KEY", "REPLYFLOW_WEBCHAT_ADDR"},
}

// knownVariables are the REPLYFLOW_ variables the configuration reads.
func knownVariables() map[string]reflect.StructField {
	known := map[string]reflect.StructField{}
	for _, settings := range append([]any{Config{}}, anys(gateway.Platforms())...) {
		typ := reflect.Indirect(reflect.ValueOf(settings)).Type()
		for i := range typ.NumField() {
			if f := typ.Field(i); f.IsExported() && f.Tag.Get("ignored") != "true" {
				known["REPLYFLOW_"+f.Tag.Get("envconfig")] = f
			}
		}
	}
	return known
}

var replyflowVar = regexp.MustCompile(`^REPLYFLOW_[A-Z0-9_]+$`)

// TestDeployFilesSetOnlyKnownVariablesAndWhatEachProcessNeeds reads
// every file under deploy/: a variable the configuration does not know
// is a typo that silently changes nothing, and a process without what it
// needs fails (or worse, runs insecurely) only once deployed.
func TestDeployFilesSetOnlyKnownVariablesAndWhatEachProcessNeeds(t *testing.T) {
	known := knownVariables()
	roles := map[string]map[string]bool{} // file:process → variables
	seen := 0
	err := filepath.WalkDir("../../deploy", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		var sets map[string][]string
		switch name := d.Name(); {
		case strings.HasSuffix(name, ".yaml") && strings.Contains(path, "compose"):
			sets = composeVariables(t, path, data)
		case strings.HasSuffix(name, ".yaml") && strings.Contains(path, "kubernetes"):
			sets = kubernetesVariables(t, path, data)
		case strings.HasSuffix(name, ".yaml"):
			var v any
			require.NoError(t, yaml.Unmarshal(data, &v), "%s is YAML", path)
		case name == "Dockerfile":
			sets = map[string][]string{"image": prefixed(data, "ENV ")}
		case strings.HasSuffix(name, ".service"):
			sets = map[string][]string{"unit": prefixed(data, "Environment=")}
		case strings.Contains(name, ".env"):
			sets = map[string][]string{"env": envFileVariables(data)}
		}
		for role, vars := range sets {
			for _, v := range vars {
				seen++
				if strings.HasPrefix(v, "REPLYFLOW_") {
					_, ok := known[v]
					assert.True(t, ok && replyflowVar.MatchString(v), "%s sets %s (%s), which the configuration does not read", path, v, role)
				}
				if roles[path+":"+role] == nil {
					roles[path+":"+role] = map[string]bool{}
				}
				roles[path+":"+role][v] = true
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, seen, 20, "the deploy files set variables")
	for _, process := range []string{"worker", "gateway"} {
		for _, deployment := range []string{"../../deploy/compose/compose.yaml", "../../deploy/kubernetes/" + process + ".yaml"} {
			set := roles[deployment+":"+process]
			require.NotNil(t, set, "%s runs a %s", deployment, process)
			for _, need := range productionNeeds[process] {
				assert.True(t, set[need], "the %s of %s misses %s", process, deployment, need)
			}
		}
	}
}

// composeVariables are each service's variables: its environment (with
// the anchors merged) and its env_file (the committed example of it).
func composeVariables(t *testing.T, path string, data []byte) map[string][]string {
	var doc struct {
		Services map[string]struct {
			Command     []string       `yaml:"command"`
			Environment map[string]any `yaml:"environment"`
			EnvFile     string         `yaml:"env_file"`
		} `yaml:"services"`
	}
	require.NoError(t, yaml.Unmarshal(data, &doc), "%s is a compose file", path)
	out := map[string][]string{}
	for name, svc := range doc.Services {
		var vars []string
		for k := range svc.Environment {
			vars = append(vars, k)
		}
		if svc.EnvFile != "" {
			example, err := os.ReadFile(filepath.Join(filepath.Dir(path), svc.EnvFile+".example"))
			require.NoError(t, err, "%s's env_file %s has a committed .example", name, svc.EnvFile)
			vars = append(vars, envFileVariables(example)...)
		}
		role := name
		if len(svc.Command) > 0 && (svc.Command[0] == "worker" || svc.Command[0] == "gateway") {
			role = svc.Command[0]
		}
		out[role] = append(out[role], vars...)
	}
	return out
}

// kubernetesVariables are the variables of each Deployment's container
// (its env, and the ConfigMap and Secret it reads, from this folder's
// configmap.yaml and secret.example.yaml), and of the ConfigMap and
// Secret themselves.
func kubernetesVariables(t *testing.T, path string, data []byte) map[string][]string {
	out := map[string][]string{}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	for {
		var obj struct {
			Kind       string            `yaml:"kind"`
			Data       map[string]string `yaml:"data"`
			StringData map[string]string `yaml:"stringData"`
			Spec       struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Args    []string                `yaml:"args"`
							Env     []struct{ Name string } `yaml:"env"`
							EnvFrom []struct {
								ConfigMapRef *struct{ Name string } `yaml:"configMapRef"`
								SecretRef    *struct{ Name string } `yaml:"secretRef"`
							} `yaml:"envFrom"`
						} `yaml:"containers"`
					} `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		}
		if err := dec.Decode(&obj); err != nil {
			require.ErrorContains(t, err, "EOF", "%s is YAML", path)
			return out
		}
		switch obj.Kind {
		case "ConfigMap":
			out["configmap"] = append(out["configmap"], keys(obj.Data)...)
		case "Secret":
			out["secret"] = append(out["secret"], keys(obj.StringData)...)
		case "Deployment", "StatefulSet":
			for _, c := range obj.Spec.Template.Spec.Containers {
				role := strings.Join(c.Args, " ")
				for _, e := range c.Env {
					out[role] = append(out[role], e.Name)
				}
				for _, from := range c.EnvFrom {
					file := "configmap.yaml"
					if from.SecretRef != nil {
						file = "secret.example.yaml"
					}
					other, err := os.ReadFile(filepath.Join(filepath.Dir(path), file))
					require.NoError(t, err)
					for _, vars := range kubernetesVariables(t, file, other) {
						out[role] = append(out[role], vars...)
					}
				}
			}
		}
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// envFileVariables are an env file's names, commented-out ones too.
func envFileVariables(data []byte) []string {
	var out []string
	s := bufio.NewScanner(strings.NewReader(string(data)))
	for s.Scan() {
		line := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s.Text()), "#"))
		if name, _, ok := strings.Cut(line, "="); ok && regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`).MatchString(name) {
			out = append(out, name)
		}
	}
	return out
}

// prefixed are the NAME of lines "<prefix>NAME=..." (a Dockerfile's ENV,
// a unit's Environment=).
func prefixed(data []byte, prefix string) []string {
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			name, _, _ := strings.Cut(strings.Trim(rest, `"`), "=")
			out = append(out, name)
		}
	}
	return out
}

// TestComposeFileIsValidForDockerCompose asks Docker Compose itself,
// where it is installed (the parse test above runs everywhere).
func TestComposeFileIsValidForDockerCompose(t *testing.T) {
	if exec.Command("docker", "compose", "version").Run() != nil {
		t.Skip("docker compose is not installed here; TestDeployFilesSetOnlyKnownVariablesAndWhatEachProcessNeeds parses the file instead")
	}
	dir := t.TempDir()
	example, err := os.ReadFile("../../deploy/compose/replyflow.env.example")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "replyflow.env"), example, 0o600))
	cmd := exec.Command("docker", "compose", "-f", "../../deploy/compose/compose.yaml", "--env-file", filepath.Join(dir, "replyflow.env"), "config", "--quiet")
	out, err := cmd.CombinedOutput()
	assert.NoError(t, err, "docker compose config: %s", out)
}

// TestDeployFilesNameOnlyRealVariablesAndSeries: any REPLYFLOW_ name in
// any deploy file (comments and alert texts too) is one the
// configuration reads, and every replyflow_ series a dashboard panel or
// an alert queries is one replyflow records.
func TestDeployFilesNameOnlyRealVariablesAndSeries(t *testing.T) {
	known := knownVariables()
	series := map[string]bool{}
	for _, name := range []string{workflows.MetricTurns, workflows.MetricModelAttempts, workflows.MetricFallbacks, workflows.MetricDeliveries,
		workflows.MetricParked, workflows.MetricHeartbeats, workflows.MetricGateDecisions, workflows.MetricProposals,
		workflows.MetricReactionsClearedLate, gateway.MetricInbound, gateway.MetricLastEvent,
		activities.MetricBudgetTokens, activities.MetricBudgetCost, activities.MetricBudgetRefused, activities.MetricBreakerTrips,
		activities.MetricVoiceSent, activities.MetricVoiceFailed,
		workers.MetricSessions, workers.MetricProposalsPending, workers.MetricTaskQueuePollers, workers.MetricGaugesUpdated,
		telemetry.MetricReady, telemetry.MetricReadyCheck} {
		series[name] = true
	}
	for _, histogram := range []string{workflows.MetricTurnDuration, workflows.MetricFirstChunk} {
		for _, suffix := range []string{"_seconds_bucket", "_seconds_count", "_seconds_sum"} {
			series[histogram+suffix] = true
		}
	}
	varName := regexp.MustCompile(`REPLYFLOW_[A-Z0-9_]*[A-Z0-9]`)
	seriesName := regexp.MustCompile(`\breplyflow_[a-z0-9_]+`)
	queried := 0
	err := filepath.WalkDir("../../deploy", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		for _, v := range varName.FindAllString(string(data), -1) {
			_, ok := known[v]
			assert.True(t, ok, "%s names %s, which the configuration does not read", path, v)
		}
		var exprs []string
		switch {
		case strings.HasSuffix(path, ".json"):
			var dash struct {
				Panels []struct {
					Title   string
					Targets []struct{ Expr string }
				}
			}
			require.NoError(t, json.Unmarshal(data, &dash), "%s is JSON", path)
			for _, p := range dash.Panels {
				require.NotEmpty(t, p.Targets, "panel %q queries something", p.Title)
				for _, target := range p.Targets {
					exprs = append(exprs, target.Expr)
				}
			}
		case strings.Contains(path, "prometheus"):
			var rules struct {
				Groups []struct {
					Rules []struct {
						Alert, Expr string
						Annotations map[string]string
					}
				}
			}
			require.NoError(t, yaml.Unmarshal(data, &rules), "%s is YAML", path)
			for _, g := range rules.Groups {
				for _, r := range g.Rules {
					assert.NotEmpty(t, r.Annotations["action"], "alert %s says what to do", r.Alert)
					exprs = append(exprs, r.Expr)
				}
			}
		}
		for _, expr := range exprs {
			for _, s := range seriesName.FindAllString(expr, -1) {
				queried++
				assert.True(t, series[s], "%s queries %s, which replyflow does not record", path, s)
			}
		}
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, queried, 15, "the dashboard and the alerts query replyflow's series")
}

// TestEveryAlertHasARuleTestThatFiresAndOneThatDoesNot: promtool runs the
// cases of alerts_test.yaml (`make alertrules`), but only those written;
// this keeps a new alert from going without them.
func TestEveryAlertHasARuleTestThatFiresAndOneThatDoesNot(t *testing.T) {
	var rules struct {
		Groups []struct {
			Rules []struct{ Alert string }
		}
	}
	data, err := os.ReadFile("../../deploy/prometheus/alerts.yaml")
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &rules))
	var tests struct {
		RuleFiles []string `yaml:"rule_files"`
		Tests     []struct {
			AlertRuleTest []struct {
				Alertname string
				ExpAlerts []any `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		}
	}
	data, err = os.ReadFile("../../deploy/prometheus/alerts_test.yaml")
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &tests))
	assert.Equal(t, []string{"alerts.yaml"}, tests.RuleFiles)
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	alerts := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts++
			assert.True(t, fires[r.Alert], "alerts_test.yaml has no case where %s fires", r.Alert)
			assert.True(t, quiet[r.Alert], "alerts_test.yaml has no case where %s stays quiet", r.Alert)
		}
	}
	assert.Greater(t, alerts, 10)
}
