package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// No secret may appear in any log line of the whole test run: every
// gateway, worker and Temporal client the tests start logs through a
// scanWriter, which checks each line against the secrets the tests
// configured as it is written (so memory stays flat however much is
// logged) and records a hit by test and kind, never the secret itself.
// TestMain fails the run when there was one.

// logScan is the run's scanner.
var logScan = newSecretScanner()

// minSecretLen keeps a short value from being registered: it would match
// ordinary words and make the scan cry wolf.
const minSecretLen = 6

// maxHitsKept bounds what a leaking run keeps; the count goes on.
const maxHitsKept = 50

type secretScanner struct {
	mu      sync.RWMutex
	secrets map[string]secretForms // by the secret itself
	lines   map[string]int         // lines scanned, by owner
	hits    []secretHit
	more    int // hits beyond maxHitsKept
}

// secretForms are the ways a secret can show in a line: as it is, and
// escaped as a URL, a query or a JSON string would carry it.
type secretForms struct {
	kind  string
	forms [][]byte
}

// secretHit is one line that held a secret, with every secret in it
// replaced by its kind.
type secretHit struct {
	Owner, Kind, Line string
}

func newSecretScanner() *secretScanner {
	return &secretScanner{secrets: map[string]secretForms{}, lines: map[string]int{}}
}

// registerSecret adds a secret the tests use (a token, a signing secret,
// a key) to the run's scan; kind names it in a report ("telegram bot
// token"). Each entry of a comma-separated list (REPLYFLOW_CODEC_KEYS) is
// registered too, and the part of each after a colon: Telegram's token
// is "<bot id>:<secret>", a codec key "<id>:<key>", and the IDs alone are
// in logs by design.
func registerSecret(kind, secret string) { logScan.register(kind, secret) }

func (s *secretScanner) register(kind, secret string) {
	if len(secret) < minSecretLen {
		panic(fmt.Sprintf("secret scan: the %s is shorter than %d bytes; give the test a longer one", kind, minSecretLen))
	}
	if entries := strings.Split(secret, ","); len(entries) > 1 {
		for _, e := range entries {
			if len(e) >= minSecretLen {
				s.register(kind+" (an entry of its list)", e)
			}
		}
	}
	if _, tail, ok := strings.Cut(secret, ":"); ok && len(tail) >= minSecretLen && !strings.Contains(tail, ",") {
		s.register(kind+" (its part after the colon)", tail)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.secrets[secret]; ok {
		return
	}
	quoted, _ := json.Marshal(secret)
	f := secretForms{kind: kind}
	for _, form := range []string{secret, url.QueryEscape(secret), url.PathEscape(secret), string(quoted[1 : len(quoted)-1])} {
		if !containsForm(f.forms, form) {
			f.forms = append(f.forms, []byte(form))
		}
	}
	s.secrets[secret] = f
}

func containsForm(forms [][]byte, form string) bool {
	for _, f := range forms {
		if string(f) == form {
			return true
		}
	}
	return false
}

// secretFieldName matches the settings that hold a secret, today's and
// tomorrow's: tokens, secrets, keys, passwords.
var secretFieldName = regexp.MustCompile(`(?i)token|secret|key|password`)

// registerConfigSecrets registers every secret-looking setting of cfg and
// of its platforms, so a test that sets a new one is covered without
// remembering to.
func registerConfigSecrets(cfg Config) {
	registerFields("", reflect.ValueOf(cfg))
	for _, p := range cfg.Platforms {
		registerFields(p.Channel()+" ", reflect.ValueOf(p).Elem())
	}
}

func registerFields(prefix string, v reflect.Value) {
	for i := range v.NumField() {
		field := v.Type().Field(i)
		if field.Type.Kind() != reflect.String || !field.IsExported() || !secretFieldName.MatchString(field.Name) {
			continue
		}
		if value := v.Field(i).String(); value != "" {
			registerSecret(prefix+field.Name, value)
		}
	}
}

// scan checks one log line written by owner.
func (s *secretScanner) scan(owner string, line []byte) {
	s.mu.RLock()
	var kinds []string
	for _, f := range s.secrets {
		for _, form := range f.forms {
			if bytes.Contains(line, form) {
				kinds = append(kinds, f.kind)
				break
			}
		}
	}
	s.mu.RUnlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines[owner]++
	switch {
	case len(kinds) == 0:
	case len(s.hits) >= maxHitsKept:
		s.more++
	default:
		slices.Sort(kinds)
		s.hits = append(s.hits, secretHit{Owner: owner, Kind: strings.Join(kinds, " and "), Line: s.redactLocked(line)})
	}
}

// redactLocked is line with every registered secret replaced by its kind,
// cut to a length that fits a report.
func (s *secretScanner) redactLocked(line []byte) string {
	type named struct{ form, kind string }
	var all []named
	for _, f := range s.secrets {
		for _, form := range f.forms {
			all = append(all, named{string(form), f.kind})
		}
	}
	// Longest first: a token goes whole before its part after the colon.
	slices.SortFunc(all, func(a, b named) int { return len(b.form) - len(a.form) })
	out := string(bytes.TrimSpace(line))
	for _, n := range all {
		out = strings.ReplaceAll(out, n.form, "<"+n.kind+">")
	}
	if len(out) > 400 {
		out = out[:400] + "…"
	}
	return strings.ToValidUTF8(out, "?")
}

// Lines is how many lines owner's loggers wrote.
func (s *secretScanner) Lines(owner string) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.lines[owner]
}

// Hits are the recorded hits.
func (s *secretScanner) Hits() []secretHit {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]secretHit(nil), s.hits...)
}

// report writes what the scan found to w and reports whether it found a
// secret: the test, the kind and the redacted line of each hit.
func (s *secretScanner) report(w io.Writer) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	total := 0
	for _, n := range s.lines {
		total += n
	}
	if len(s.hits) == 0 {
		fmt.Fprintf(w, "secret scan: %d log lines of %d loggers checked against %d secrets, none found\n", total, len(s.lines), len(s.secrets))
		return false
	}
	fmt.Fprintf(w, "secret scan: FAILED: %d log lines held a secret (of %d checked); tests must never log a token or secret:\n", len(s.hits)+s.more, total)
	for _, h := range s.hits {
		fmt.Fprintf(w, "  test %s: a %s in the line %q\n", h.Owner, h.Kind, h.Line)
	}
	if s.more > 0 {
		fmt.Fprintf(w, "  and %d more\n", s.more)
	}
	return true
}

// scanWriter scans each log line for secrets before passing it on. slog
// handlers and the log package write one record per Write.
type scanWriter struct {
	scanner *secretScanner
	// owner names who wrote the line: a test, or ownerOf for a logger
	// the tests share.
	owner   string
	ownerOf func(line []byte) string
	forward io.Writer
}

func (w scanWriter) Write(p []byte) (int, error) {
	owner := w.owner
	if w.ownerOf != nil {
		owner = w.ownerOf(p)
	}
	w.scanner.scan(owner, p)
	return w.forward.Write(p)
}

// logOutput is where test loggers forward their lines: nowhere unless the
// tests run with -v.
func logOutput() io.Writer {
	if testing.Verbose() {
		return os.Stderr
	}
	return io.Discard
}

// testLogger is the logger of t's gateways and workers, at level (a
// REPLYFLOW_LOG_LEVEL value), scanned for secrets.
func testLogger(t *testing.T, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		t.Fatalf("log level %q: %v", level, err)
	}
	w := scanWriter{scanner: logScan, owner: t.Name(), forward: logOutput()}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

// taskQueueTest finds the test in a shared client's log line by its task
// queue (testConfig names it test-<test>-<n>).
var taskQueueTest = regexp.MustCompile(`test-(Test\S*?)-\d+\b`)

// sharedClientLogger is the logger of the Temporal client the tests
// share; its lines name their test by task queue where they have one.
func sharedClientLogger() *slog.Logger {
	w := scanWriter{scanner: logScan, forward: logOutput(), ownerOf: func(line []byte) string {
		if m := taskQueueTest.FindSubmatch(line); m != nil {
			return string(m[1]) + " (Temporal client)"
		}
		return "the shared Temporal client"
	}}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// withLeakCheck is the run's exit code: testsCode, or 1 when a secret
// was found in a log line (the report on stderr says where).
func withLeakCheck(testsCode int) int {
	if logScan.report(os.Stderr) && testsCode == 0 {
		return 1
	}
	return testsCode
}

// plantSecretEnv makes the test binary plant a secret in a debug log line
// and exit as TestMain does after the tests, without running any: it
// proves the check can fail (TestSecretInALogLineFailsTheRun).
const plantSecretEnv = "REPLYFLOW_TEST_PLANT_SECRET"

// plantedSecret is what the planted run logs; only the kind and the
// owner may reach its output.
const plantedSecret = "planted-s3cret-value"

func plantSecretAndExit() {
	registerSecret("planted signing secret", plantedSecret)
	w := scanWriter{scanner: logScan, owner: "TestMain (planted)", forward: io.Discard}
	logger := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	logger.Debug("calling the API", "url", "https://api.example/bot1:"+url.PathEscape(plantedSecret)+"/getMe")
	os.Exit(withLeakCheck(0))
}
