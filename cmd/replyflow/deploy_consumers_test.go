package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	composecli "github.com/compose-spec/compose-go/v2/cli"
	composetypes "github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/replyflow/replyflow/workers/codec"
	"github.com/replyflow/replyflow/workflows"
)

// The deploy files are read here as their consumers read them: Docker
// Compose's own loader (compose-spec/compose-go, which validates against
// the Compose specification's schema), the Kubernetes API types with
// unknown fields refused, and systemd's unit keys. Each test then checks
// what an operator would otherwise find only once deployed.

const deployDir = "../../deploy"

// defaults is the configuration with no variable set.
func defaults(t *testing.T) Config {
	cfg, err := readConfig("REPLYFLOW_TEST_NOTHING_SET")
	require.NoError(t, err)
	return cfg
}

// loadCompose loads compose/compose.yaml with its env file made from the
// committed example, as `docker compose --env-file replyflow.env` does.
func loadCompose(t *testing.T) *composetypes.Project {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join(deployDir, "compose"))))
	example, err := os.ReadFile(filepath.Join(dir, "replyflow.env.example"))
	require.NoError(t, err)
	envFile := filepath.Join(dir, "replyflow.env")
	require.NoError(t, os.WriteFile(envFile, example, 0o600))
	opts, err := composecli.NewProjectOptions([]string{filepath.Join(dir, "compose.yaml")},
		composecli.WithWorkingDirectory(dir), composecli.WithEnvFiles(envFile), composecli.WithDotEnv)
	require.NoError(t, err)
	project, err := opts.LoadProject(context.Background())
	require.NoError(t, err, "docker compose would refuse compose.yaml")
	return project
}

// role is what a compose service runs: replyflow's first argument
// (worker, gateway, codec-server), else the service's name.
func role(svc composetypes.ServiceConfig) string {
	if svc.Image == "replyflow:local" && len(svc.Command) > 0 {
		return svc.Command[0]
	}
	return svc.Name
}

func env(svc composetypes.ServiceConfig, name string) string {
	if v := svc.Environment[name]; v != nil {
		return *v
	}
	return ""
}

// flagValues are the values of --name in args.
func flagValues(args []string, name string) []string {
	var out []string
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			out = append(out, v)
		} else if a == "--"+name && i+1 < len(args) {
			out = append(out, args[i+1])
		}
	}
	return out
}

func TestComposeFileLoadsAndHoldsTogether(t *testing.T) {
	project := loadCompose(t)
	known := knownVariables()
	grace := defaults(t).ShutdownGrace
	services := map[string]composetypes.ServiceConfig{}
	for _, svc := range project.Services {
		services[role(svc)] = svc
		for name := range svc.Environment {
			if strings.HasPrefix(name, "REPLYFLOW_") {
				_, ok := known[name]
				assert.True(t, ok, "compose service %s sets %s, which the configuration does not read", svc.Name, name)
			}
		}
		for _, part := range append(append([]string{}, svc.Entrypoint...), svc.Command...) {
			assert.NotRegexp(t, `\|\|\s*true`, part, "compose service %s hides its failures with `|| true`: a failed setup then looks like a done one", svc.Name)
		}
	}
	for _, name := range []string{"worker", "gateway", "codec-server"} {
		require.Contains(t, services, name, "compose.yaml runs a %s", name)
	}

	t.Run("replyflow's processes get longer than their shutdown grace to stop", func(t *testing.T) {
		for _, name := range []string{"worker", "gateway"} {
			svc := services[name]
			g := grace
			if v := env(svc, "REPLYFLOW_SHUTDOWN_GRACE"); v != "" {
				var err error
				g, err = time.ParseDuration(v)
				require.NoError(t, err)
			}
			stop := 10 * time.Second // docker's default
			if svc.StopGracePeriod != nil {
				stop = time.Duration(*svc.StopGracePeriod)
			}
			assert.Greater(t, stop, g, "compose service %s is killed %s after SIGTERM, within its REPLYFLOW_SHUTDOWN_GRACE (%s)", svc.Name, stop, g)
		}
	})

	t.Run("the web chat and the webhooks are published on ports of their own", func(t *testing.T) {
		gw := services["gateway"]
		webchat, webhook := env(gw, "REPLYFLOW_WEBCHAT_ADDR"), env(gw, "REPLYFLOW_WEBHOOK_ADDR")
		require.NotEmpty(t, webhook, "the gateway sets no REPLYFLOW_WEBHOOK_ADDR, so whoever reaches the webhooks reaches the web chat too")
		_, chatPort, err := net.SplitHostPort(webchat)
		require.NoError(t, err)
		_, hookPort, err := net.SplitHostPort(webhook)
		require.NoError(t, err)
		require.NotEqual(t, chatPort, hookPort, "the web chat and the webhooks listen on one port")
		published := map[string][]composetypes.ServicePortConfig{}
		for _, p := range gw.Ports {
			published[strconv.Itoa(int(p.Target))] = append(published[strconv.Itoa(int(p.Target))], p)
		}
		require.NotEmpty(t, published[hookPort], "the webhooks' port %s is not published", hookPort)
		require.NotEmpty(t, published[chatPort], "the web chat's port %s is not published", chatPort)
		for _, p := range published[chatPort] {
			ip := net.ParseIP(p.HostIP)
			assert.True(t, ip != nil && ip.IsLoopback(), "the web chat is published on %q, beyond this host: publish it on 127.0.0.1 behind a proxy, and only the webhooks' port to the internet", p.HostIP)
		}
	})

	t.Run("the Temporal UI decrypts through the codec server", func(t *testing.T) {
		checkUICodecPath(t, services)
	})
}

// checkUICodecPath follows the Temporal UI's codec calls as a browser on
// the host makes them: the UI's settings name the endpoint, the browser
// opens the UI at its published address (its origin) and calls the
// endpoint from there, with the credentials the settings say it sends.
// The codec server is the real handler, with the compose file's flags,
// token and keys.
func checkUICodecPath(t *testing.T, services map[string]composetypes.ServiceConfig) {
	ui, ok := services["temporal-ui"]
	require.True(t, ok, "compose.yaml runs the Temporal UI as temporal-ui")
	server := services["codec-server"]

	uiPort := env(ui, "TEMPORAL_UI_PORT")
	if uiPort == "" {
		uiPort = "8080"
	}
	var uiOrigin string
	for _, p := range ui.Ports {
		if strconv.Itoa(int(p.Target)) == uiPort {
			uiOrigin = "http://" + net.JoinHostPort(p.HostIP, p.Published)
		}
	}
	require.NotEmpty(t, uiOrigin, "the UI's port %s is published", uiPort)

	endpoint, err := url.Parse(env(ui, "TEMPORAL_CODEC_ENDPOINT"))
	require.NoError(t, err)
	require.NotEmpty(t, endpoint.Host, "the UI has a codec endpoint (TEMPORAL_CODEC_ENDPOINT)")
	args := server.Command[1:]
	listen := env(server, "REPLYFLOW_CODEC_SERVER_ADDR")
	if l := flagValues(args, "listen"); len(l) > 0 {
		listen = l[len(l)-1]
	}
	_, listenPort, err := net.SplitHostPort(listen)
	require.NoError(t, err, "the codec server's --listen")
	reached := false
	for _, p := range server.Ports {
		if strconv.Itoa(int(p.Target)) == listenPort && net.JoinHostPort(p.HostIP, p.Published) == endpoint.Host {
			reached = true
		}
	}
	assert.True(t, reached, "the UI's codec endpoint %s is not where the codec server (listening on %s) is published: %v", endpoint, listen, server.Ports)

	token := env(server, "REPLYFLOW_CODEC_TOKEN")
	require.NoError(t, codec.CheckListen(listen, token), "the codec server would not start")
	origins := flagValues(args, "ui-origin")
	if len(origins) == 0 && env(server, "REPLYFLOW_CODEC_UI_ORIGINS") != "" {
		origins = strings.Split(env(server, "REPLYFLOW_CODEC_UI_ORIGINS"), ",")
	}
	assert.Contains(t, origins, uiOrigin, "the codec server's --ui-origin does not name the UI's origin, where compose publishes the UI: the browser's calls are refused")
	includeCredentials := env(ui, "TEMPORAL_CODEC_INCLUDE_CREDENTIALS") == "true"
	passAccessToken := env(ui, "TEMPORAL_CODEC_PASS_ACCESS_TOKEN") == "true"
	if token != "" {
		assert.True(t, includeCredentials || passAccessToken, "the codec server requires its token (REPLYFLOW_CODEC_TOKEN) and the UI sends no credentials: set TEMPORAL_CODEC_INCLUDE_CREDENTIALS=true and sign the browser in at the codec server")
	}
	if t.Failed() {
		return
	}
	keys, err := codec.ParseKeys(env(server, "REPLYFLOW_CODEC_KEYS"))
	if err != nil {
		// The example's placeholder is no key: the path is checked with one.
		keys, err = codec.ParseKeys("k1:" + strings.Repeat("A", 43) + "=")
		require.NoError(t, err)
	}
	codecs, err := codec.Codecs(keys, false)
	require.NoError(t, err)
	h, err := codec.NewHandler(codecs, codec.HandlerOptions{Token: token, Origins: origins})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()

	// What the browser sends: the UI's own cookies for the codec's site
	// when TEMPORAL_CODEC_INCLUDE_CREDENTIALS is true, and the signed-in
	// user's access token when TEMPORAL_CODEC_PASS_ACCESS_TOKEN is (the
	// UI then refuses an endpoint that is not https).
	if passAccessToken {
		require.Equal(t, "https", endpoint.Scheme, "the UI passes its access token to an https codec endpoint only")
		require.Equal(t, "true", env(ui, "TEMPORAL_AUTH_ENABLED"), "the UI passes an access token only once its users sign in (TEMPORAL_AUTH_ENABLED)")
	}
	var cookies []*http.Cookie
	if includeCredentials && token != "" {
		// The operator signs the browser in at the codec server once
		// (the deploy docs' step), with the token from replyflow.env.
		resp, err := http.PostForm(srv.URL+"/signin", url.Values{"token": {token}})
		require.NoError(t, err)
		resp.Body.Close()
		cookies = resp.Cookies()
	}

	path := strings.TrimSuffix(endpoint.Path, "/") + "/decode"
	preflight, err := http.NewRequest(http.MethodOptions, srv.URL+path, nil)
	require.NoError(t, err)
	preflight.Header.Set("Origin", uiOrigin)
	preflight.Header.Set("Access-Control-Request-Method", "POST")
	preflight.Header.Set("Access-Control-Request-Headers", "content-type,x-namespace")
	resp, err := http.DefaultClient.Do(preflight)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, uiOrigin, resp.Header.Get("Access-Control-Allow-Origin"),
		"the codec server (--ui-origin %v) refuses the UI's origin %s, where compose publishes the UI (%d)", origins, uiOrigin, resp.StatusCode)
	if includeCredentials {
		require.Equal(t, "true", resp.Header.Get("Access-Control-Allow-Credentials"))
	}

	clear, err := converter.GetDefaultDataConverter().ToPayload("hello from the UI's test")
	require.NoError(t, err)
	encoded, err := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), codecs...).ToPayload("hello from the UI's test")
	require.NoError(t, err)
	body, err := protojson.Marshal(&commonpb.Payloads{Payloads: []*commonpb.Payload{encoded}})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Origin", uiOrigin)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Namespace", "default")
	for _, c := range cookies {
		req.AddCookie(c)
	}
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var answer bytes.Buffer
	_, _ = answer.ReadFrom(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode,
		"the UI's decode request is refused (token required: %t, the UI sends cookies: %t, its access token: %t): %s", token != "", includeCredentials, passAccessToken, answer.String())
	var decoded commonpb.Payloads
	require.NoError(t, protojson.Unmarshal(answer.Bytes(), &decoded))
	require.Len(t, decoded.Payloads, 1)
	assert.Equal(t, clear.Data, decoded.Payloads[0].Data, "the UI reads the payload decrypted")
}

// kubeObject is one document of a manifest, decoded strictly into its
// API type.
type kubeObject struct {
	file string
	kind string
	obj  any
}

// loadKubernetes decodes every manifest under kubernetes/ strictly: a
// field the API type does not have fails, as `kubectl apply` (with the
// server's strict field validation) would.
func loadKubernetes(t *testing.T) []kubeObject {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(deployDir, "kubernetes", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var out []kubeObject
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
			if strings.TrimSpace(regexp.MustCompile(`(?m)^\s*#.*$`).ReplaceAllString(doc, "")) == "" {
				continue
			}
			var meta metav1.TypeMeta
			require.NoError(t, k8syaml.Unmarshal([]byte(doc), &meta), "%s document %d", file, i)
			var obj any
			switch meta.APIVersion + " " + meta.Kind {
			case "apps/v1 Deployment":
				obj = &appsv1.Deployment{}
			case "apps/v1 StatefulSet":
				obj = &appsv1.StatefulSet{}
			case "v1 Service":
				obj = &corev1.Service{}
			case "v1 ConfigMap":
				obj = &corev1.ConfigMap{}
			case "v1 Secret":
				obj = &corev1.Secret{}
			case "policy/v1 PodDisruptionBudget":
				obj = &policyv1.PodDisruptionBudget{}
			default:
				t.Fatalf("%s document %d is %s %s, which this test does not know: add its type", file, i, meta.APIVersion, meta.Kind)
			}
			require.NoError(t, k8syaml.UnmarshalStrict([]byte(doc), obj), "%s document %d (%s) does not decode strictly", file, i, meta.Kind)
			out = append(out, kubeObject{file: filepath.Base(file), kind: meta.Kind, obj: obj})
		}
	}
	return out
}

// workload is a Deployment's or StatefulSet's pod template and size.
type workload struct {
	kubeObject
	name     string
	replicas int32
	template corev1.PodTemplateSpec
}

func workloads(objs []kubeObject) []workload {
	var out []workload
	for _, o := range objs {
		switch w := o.obj.(type) {
		case *appsv1.Deployment:
			out = append(out, workload{o, w.Name, ptrOr(w.Spec.Replicas, 1), w.Spec.Template})
		case *appsv1.StatefulSet:
			out = append(out, workload{o, w.Name, ptrOr(w.Spec.Replicas, 1), w.Spec.Template})
		}
	}
	return out
}

func ptrOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// containerEnv is a container's variables as the pod sees them: the
// ConfigMaps and Secrets it reads (from these files), then its env.
func containerEnv(objs []kubeObject, c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, from := range c.EnvFrom {
		for _, o := range objs {
			switch v := o.obj.(type) {
			case *corev1.ConfigMap:
				if from.ConfigMapRef != nil && from.ConfigMapRef.Name == v.Name {
					for k, val := range v.Data {
						out[k] = val
					}
				}
			case *corev1.Secret:
				if from.SecretRef != nil && from.SecretRef.Name == v.Name {
					for k, val := range v.StringData {
						out[k] = val
					}
				}
			}
		}
	}
	for _, e := range c.Env {
		out[e.Name] = e.Value
	}
	return out
}

// secretName says which settings are secrets: tokens, keys, passwords
// and the store's DSN (it carries the database's password).
var secretName = regexp.MustCompile(`TOKEN|KEY|SECRET|PASSWORD|_DSN$`)

func TestKubernetesManifestsDecodeStrictlyAndHoldTogether(t *testing.T) {
	objs := loadKubernetes(t)
	known := knownVariables()
	grace := defaults(t).ShutdownGrace
	wls := workloads(objs)
	require.NotEmpty(t, wls)

	for _, o := range objs {
		switch v := o.obj.(type) {
		case *corev1.Secret:
			for k := range v.StringData {
				assert.Regexp(t, secretName, k, "%s: %s is not a secret; keep it in the ConfigMap, where operators read and diff it", o.file, k)
			}
		case *corev1.ConfigMap:
			for k := range v.Data {
				assert.NotRegexp(t, secretName, k, "%s: %s is a secret; keep it in the Secret", o.file, k)
			}
		}
	}

	var webchatGateways []workload
	for _, w := range wls {
		spec := w.template.Spec
		for _, c := range spec.Containers {
			vars := containerEnv(objs, c)
			for name := range vars {
				if strings.HasPrefix(name, "REPLYFLOW_") {
					_, ok := known[name]
					assert.True(t, ok, "%s: %s sets %s, which the configuration does not read", w.file, w.name, name)
				}
			}
			g := grace
			if v := vars["REPLYFLOW_SHUTDOWN_GRACE"]; v != "" {
				var err error
				g, err = time.ParseDuration(v)
				require.NoError(t, err)
			}
			kill := time.Duration(ptrOr(spec.TerminationGracePeriodSeconds, 30)) * time.Second
			assert.Greater(t, kill, g, "%s: %s is killed %s after SIGTERM, within its REPLYFLOW_SHUTDOWN_GRACE (%s): raise terminationGracePeriodSeconds", w.file, w.name, kill, g)
			if len(c.Args) > 0 && c.Args[0] == "gateway" && vars["REPLYFLOW_WEBCHAT_ENABLED"] != "false" {
				webchatGateways = append(webchatGateways, w)
			}
			if len(c.Args) > 0 && c.Args[0] == "worker" {
				checkWebchatURL(t, objs, w, vars["REPLYFLOW_WEBCHAT_URL"])
			}
		}
		covered := false
		for _, o := range objs {
			if pdb, ok := o.obj.(*policyv1.PodDisruptionBudget); ok {
				sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
				require.NoError(t, err)
				if sel.Matches(labels.Set(w.template.Labels)) {
					covered = true
				}
			}
		}
		assert.True(t, covered, "%s: %s has no PodDisruptionBudget, so a node drain may take all its pods at once", w.file, w.name)
	}

	require.Len(t, webchatGateways, 1, "exactly one gateway workload serves the web chat (REPLYFLOW_WEBCHAT_ENABLED=false on the others)")
	gw := webchatGateways[0]
	assert.Equal(t, int32(1), gw.replicas, "%s: the web chat runs on one gateway only; %s has %d replicas", gw.file, gw.name, gw.replicas)
	_, isSet := gw.obj.(*appsv1.StatefulSet)
	assert.True(t, isSet, "%s: %s is a %s, which starts a new pod before the old one is gone (a rollout, an eviction), so two gateways serve the web chat at once; a StatefulSet of one keeps at most one", gw.file, gw.name, gw.kind)
	text, err := os.ReadFile(filepath.Join(deployDir, "kubernetes", gw.file))
	require.NoError(t, err)
	assert.NotRegexp(t, `(?i)replicas suit[^;.]*web chat`, commentText(text), "%s's comment says several replicas suit the web chat, which runs on one gateway only", gw.file)
}

// checkWebchatURL: the worker delivers the web chat's replies to
// REPLYFLOW_WEBCHAT_URL, which must lead to the one gateway serving the
// web chat, by its pod's own name, not through a Service that balances.
func checkWebchatURL(t *testing.T, objs []kubeObject, worker workload, raw string) {
	u, err := url.Parse(raw)
	require.NoError(t, err)
	host := u.Hostname()
	require.NotEmpty(t, host, "%s: the worker has no REPLYFLOW_WEBCHAT_URL", worker.name)
	pod, service, _ := strings.Cut(host, ".")
	for _, o := range objs {
		svc, ok := o.obj.(*corev1.Service)
		if !ok {
			continue
		}
		if svc.Name == pod {
			t.Errorf("%s: REPLYFLOW_WEBCHAT_URL (%s) points at Service %s, a balancer; point it at the web chat gateway's own pod (<statefulset>-0.<headless service>)", worker.file, raw, svc.Name)
			return
		}
		if svc.Name == strings.Split(service, ".")[0] {
			assert.Equal(t, corev1.ClusterIPNone, svc.Spec.ClusterIP, "%s: Service %s gives pods names only when headless (clusterIP: None)", o.file, svc.Name)
			for _, set := range objs {
				if s, ok := set.obj.(*appsv1.StatefulSet); ok && s.Spec.ServiceName == svc.Name && pod == s.Name+"-0" {
					return
				}
			}
		}
	}
	t.Errorf("%s: REPLYFLOW_WEBCHAT_URL (%s) does not name the first pod of a StatefulSet through its headless Service", worker.file, raw)
}

// commentText is a file's comment lines, joined into one text.
func commentText(data []byte) string {
	var b strings.Builder
	s := bufio.NewScanner(bytes.NewReader(data))
	for s.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "#"); ok {
			b.WriteString(strings.TrimSpace(rest) + " ")
		}
	}
	return b.String()
}

// unit is a systemd unit's [Service] keys (the last value of each, as
// systemd takes it, and every Environment= assignment).
type unit struct {
	keys map[string]string
	env  map[string]string
}

func readUnit(t *testing.T, path string) unit {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	u := unit{keys: map[string]string{}, env: map[string]string{}}
	section := ""
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "[") {
			section = line
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		require.True(t, ok, "%s: %q is not key=value", path, line)
		if section != "[Service]" {
			continue
		}
		u.keys[k] = v
		if k == "Environment" {
			name, val, _ := strings.Cut(strings.Trim(v, `"`), "=")
			u.env[name] = val
		}
	}
	return u
}

// sqliteStore is the SQLite file a unit's process opens as its store
// (REPLYFLOW_STORE_DSN, relative to the working directory), or "" when
// it names PostgreSQL.
func sqliteStore(u unit, cfg Config) string {
	dsn := cmpOr(u.env["REPLYFLOW_STORE_DSN"], cfg.StoreDSN)
	if strings.HasPrefix(dsn, "postgres") {
		return ""
	}
	if !filepath.IsAbs(dsn) {
		dsn = filepath.Join(cmpOr(u.keys["WorkingDirectory"], "/"), dsn)
	}
	return strings.ReplaceAll(dsn, "%S", "/var/lib")
}

// systemdUnits are the units under deploy/systemd by the process each
// runs (worker, gateway).
func systemdUnits(t *testing.T) map[string]unit {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(deployDir, "systemd", "*.service"))
	require.NoError(t, err)
	out := map[string]unit{}
	for _, path := range paths {
		u := readUnit(t, path)
		fields := strings.Fields(u.keys["ExecStart"])
		require.GreaterOrEqual(t, len(fields), 2, "%s: ExecStart=%s", path, u.keys["ExecStart"])
		out[fields[1]] = u
	}
	require.Contains(t, out, "worker")
	require.Contains(t, out, "gateway")
	return out
}

func TestSystemdUnitsCanWriteTheirStateAndStopInTime(t *testing.T) {
	cfg := defaults(t)
	for name, u := range systemdUnits(t) {
		stop := 90 * time.Second // systemd's DefaultTimeoutStopSec
		if v := u.keys["TimeoutStopSec"]; v != "" {
			secs, err := strconv.Atoi(strings.TrimSuffix(v, "s"))
			require.NoError(t, err, "%s: TimeoutStopSec=%s", name, v)
			stop = time.Duration(secs) * time.Second
		}
		assert.Greater(t, stop, cfg.ShutdownGrace, "the %s unit stops within REPLYFLOW_SHUTDOWN_GRACE", name)
		// The worker and the gateway (the web chat's history, the files
		// of messages) open the store: a SQLite file must be writable.
		dsn := sqliteStore(u, cfg)
		if dsn == "" {
			continue
		}
		readOnly := u.keys["ProtectSystem"] == "strict" || u.keys["DynamicUser"] == "yes"
		if !readOnly {
			continue
		}
		writable := false
		for _, dir := range strings.Fields(u.keys["StateDirectory"] + " " + u.keys["ReadWritePaths"]) {
			if !filepath.IsAbs(dir) {
				dir = filepath.Join("/var/lib", dir)
			}
			if strings.HasPrefix(dsn, dir+"/") {
				writable = true
			}
		}
		assert.True(t, writable, "the %s unit: the SQLite store %s is on a read-only root (DynamicUser=%s, ProtectSystem=%s): set StateDirectory= and REPLYFLOW_STORE_DSN under it",
			name, dsn, u.keys["DynamicUser"], u.keys["ProtectSystem"])
	}
}

// TestSystemdUnitsShareOneStore: the gateway keeps the web chat's
// history and, with REPLYFLOW_MEDIA=true, the files users send in its
// store, and the worker reads those files from its own, so on one host
// the two units must open one store: the same SQLite file (or the same
// /etc/replyflow/env naming PostgreSQL for both), as one user that owns
// the file, its WAL and its shared-memory index, and that the committed
// sysusers.d file creates.
func TestSystemdUnitsShareOneStore(t *testing.T) {
	cfg := defaults(t)
	units := systemdUnits(t)
	worker, gateway := units["worker"], units["gateway"]
	assert.Equal(t, worker.keys["EnvironmentFile"], gateway.keys["EnvironmentFile"],
		"the worker and the gateway read one environment file, so a postgres:// REPLYFLOW_STORE_DSN there names one store for both")
	store := sqliteStore(worker, cfg)
	assert.Equal(t, store, sqliteStore(gateway, cfg),
		"the gateway's store is not the worker's: with REPLYFLOW_MEDIA=true the worker would not find the files users send through the gateway")
	if store == "" {
		return
	}
	for _, key := range []string{"User", "Group"} {
		assert.NotEmpty(t, worker.keys[key], "the worker unit names its %s, the one the gateway runs as", key)
		assert.Equal(t, worker.keys[key], gateway.keys[key], "the worker and the gateway write one SQLite file (%s) as one %s", store, key)
	}
	data, err := os.ReadFile(filepath.Join(deployDir, "systemd", "sysusers.d", "replyflow.conf"))
	require.NoError(t, err, "a sysusers.d file creates the units' user")
	created := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "u" {
			created[f[1]] = true
		}
	}
	assert.True(t, created[worker.keys["User"]], "sysusers.d/replyflow.conf creates the user %q the units run as", worker.keys["User"])
	assert.Equal(t, worker.keys["User"], worker.keys["Group"], "sysusers.d's u line creates a group of the user's name")
}

// TestSystemdUnitsPassSystemdAnalyzeVerify asks systemd itself, where
// it is installed: `systemd-analyze verify` on a root holding the units,
// the binary they run and their environment file (the key checks above
// run everywhere).
func TestSystemdUnitsPassSystemdAnalyzeVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed here; TestSystemdUnitsCanWriteTheirStateAndStopInTime reads the units instead")
	}
	root := t.TempDir()
	units, err := filepath.Glob(filepath.Join(deployDir, "systemd", "*.service"))
	require.NoError(t, err)
	for _, dir := range []string{"etc/systemd/system", "etc/replyflow", "usr/local/bin", "usr/lib"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, dir), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, "usr/local/bin/replyflow"), []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "etc/replyflow/env"), nil, 0o600))
	// The system's own units (the targets ours start after).
	require.NoError(t, os.Symlink("/usr/lib/systemd", filepath.Join(root, "usr/lib/systemd")))
	var names []string
	for _, u := range units {
		data, err := os.ReadFile(u)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(root, "etc/systemd/system", filepath.Base(u)), data, 0o644))
		names = append(names, filepath.Base(u))
	}
	out, _ := exec.Command(analyze, append([]string{"verify", "--man=no", "--root=" + root}, names...)...).CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		for _, name := range names {
			assert.NotContains(t, line, name, "systemd-analyze verify")
		}
	}
	// The user the units run as, from the committed sysusers.d file.
	sysusers, err := exec.LookPath("systemd-sysusers")
	if err != nil {
		return
	}
	conf, err := os.ReadFile(filepath.Join(deployDir, "systemd", "sysusers.d", "replyflow.conf"))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "etc/sysusers.d"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "etc/sysusers.d/replyflow.conf"), conf, 0o644))
	out, err = exec.Command(sysusers, "--dry-run", "--root="+root).CombinedOutput()
	require.NoError(t, err, "systemd-sysusers --dry-run: %s", out)
	user := readUnit(t, units[0]).keys["User"]
	assert.Contains(t, string(out), "'"+user+"'", "systemd-sysusers creates the units' user %s", user)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestComposeTemporalSetupIsIdempotentAndFailsOnRealErrors runs the
// compose file's temporal-setup command as its container does (its
// entrypoint, the temporal CLI on PATH) against the tests' dev server: on
// a new namespace it registers replyflow's search attributes, run again
// it succeeds and changes nothing, and where one of them has another type
// it fails and names it.
func TestComposeTemporalSetupIsIdempotentAndFailsOnRealErrors(t *testing.T) {
	project := loadCompose(t)
	svc, err := project.GetService("temporal-setup")
	require.NoError(t, err)
	argv := append(append([]string{}, svc.Entrypoint...), svc.Command...)
	require.NotEmpty(t, argv)
	cli := os.Getenv("REPLYFLOW_TEST_TEMPORAL_CLI")
	if cli == "" {
		cli, _ = filepath.Abs("../../bin/temporal")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := func(namespace string) (string, error) {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(cli)+":"+os.Getenv("PATH"),
			"TEMPORAL_ADDRESS="+temporalServer.FrontendHostPort(), "TEMPORAL_NAMESPACE="+namespace)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	want := map[string]enumspb.IndexedValueType{}
	for _, sa := range workflows.SearchAttributes() {
		name, kind, _ := strings.Cut(sa, "=")
		want[name] = enumspb.IndexedValueType(enumspb.IndexedValueType_value["INDEXED_VALUE_TYPE_"+strings.ToUpper(kind)])
	}
	ops := temporalServer.Client().OperatorService()

	fresh := fmt.Sprintf("setup-%d", time.Now().UnixNano())
	out, err := run(fresh)
	require.NoError(t, err, "the setup on a new namespace: %s", out)
	got, err := ops.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: fresh})
	require.NoError(t, err, "the setup leaves the namespace it is given (TEMPORAL_NAMESPACE=%s) without replyflow's search attributes: %s", fresh, out)
	for name, typ := range want {
		assert.Equal(t, typ, got.GetCustomAttributes()[name], "the setup registers %s on namespace %s", name, fresh)
	}
	out, err = run(fresh)
	require.NoError(t, err, "the setup run again (a restarted stack): %s", out)

	// A namespace where ReplyflowChat is Text: the sessions' queries by
	// chat would fail, so the setup must.
	clash := fresh + "-clash"
	_, err = temporalServer.Client().WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: clash, WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour)})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := ops.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: clash,
			SearchAttributes: map[string]enumspb.IndexedValueType{"ReplyflowChat": enumspb.INDEXED_VALUE_TYPE_TEXT}})
		return err == nil
	}, time.Minute, 200*time.Millisecond, "the operator service knows the new namespace")
	out, err = run(clash)
	require.Error(t, err, "the setup succeeded on a namespace where ReplyflowChat is Text: %s", out)
	assert.Contains(t, out, "ReplyflowChat", "the failure names the attribute")
}
