package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/template"

	"github.com/stretchr/testify/require"
)

// The bad-input corpus (testdata/badinput/<channel>/<case>.txt) is what a
// stranger, a broken proxy or a replaying attacker can send to the
// gateway's HTTP surface, one request per file, with the answer the
// gateway owes it. e2e_badinput_test.go runs it against the real gateway.
//
// A case file is a head of "key: value" lines ("#" lines are comments:
// say why the case exists), a line "---", and the body, byte for byte up
// to the file's last newline:
//
//	# A body cut off mid-object is refused with a reason.
//	method: POST
//	path: /api/chats/bi-wc-truncated/messages
//	header: Content-Type: application/json
//	session: bi-wc-truncated
//	expect: 400
//	reason: not a valid message
//	---
//	{"sender_id":"alice","text":"hi"
//
// Keys: method; path (sent as it is on the request line, so %2e%2e and
// %2F reach the server unchanged); header (repeatable, "Name: value");
// expect (below); reason (a text the answer's body must contain);
// session (the chat the case addresses: its session must exist after the
// corpus if the case is accepted, and must not otherwise; an accepted
// case's chat carries <% .Run %>, below); repeat (send
// it n times, each must meet expect: a replay); seen (accepted cases:
// how many distinct messages the session holds after the corpus; a
// replay counts once); answer (accepted web chat cases: a text the
// chat's answer must contain, once the corpus has run: the session did
// not merely start, it answered); sign (Slack: how to sign, see
// slackSignModes); chunked (yes: send the body without a Content-Length).
//
// expect is one of: a 4xx status ("413"), which must come with a reason
// in the body; "4xx", any of them with a reason (where 400 and 401 would
// both be right, or a rate limit may answer 429); "accepted 202", a 2xx
// whose message reached its session; "ignored 200", a 2xx by design
// (Telegram and Slack retry anything else) that started no session.
//
// The path, the header values, the session, the reason, the answer and
// the body are templates with the delimiters <% %>, so what cannot be stored is built
// when the case runs: <% repeat 2097152 "a" %> (2 MiB of a),
// <% nest 10000 "[" "]" %> (10,000 nested arrays), <% gzip "text" %>,
// <% add 1 2 %>, Go string literals for bytes a text file should not
// hold ("\x00", "\xff", "\x1b[31m"), the secrets the test configured:
// <% .TelegramSecret %>, <% .WebchatBotToken %>, and the largest file
// the gateway takes: <% .MediaMaxBytes %>, and the number of this run of
// the corpus: <% .Run %>. The dev server keeps every session, also those
// of an earlier run of the corpus (go test -count=N), so each accepted
// case's chat ends in the run's number, in its session and wherever the
// request names it ("bi-wc-control-<% .Run %>", "7799<% .Run %>"): its
// session is new to the server in every run.
//
// The web chat's uploads are multipart forms; a case writes its parts'
// lines ending in LF alone, which Go's multipart reader takes as it
// takes CRLF.

// badInputCase is one parsed case file.
type badInputCase struct {
	Channel, Name string
	Method, Path  string
	Headers       [][2]string
	Sign          string
	Chunked       bool
	Body          []byte
	Repeat        int
	Expect        badInputOutcome
	Reason        string
	Session       string
	Seen          int
	Answer        string
}

// badInputOutcome is what a case's answer must be.
type badInputOutcome struct {
	Kind   string // outcomeRefused, outcomeAccepted or outcomeIgnored
	Status int    // the exact status; 0: any 4xx (refused only)
}

const (
	outcomeRefused  = "refused"
	outcomeAccepted = "accepted"
	outcomeIgnored  = "ignored"
)

// isControl reports a case that must run after all others of its
// channel: a valid request that shows the gateway still works.
func (c badInputCase) isControl() bool { return c.Name == "control" }

// corpusVars are what the case templates may name.
type corpusVars struct {
	TelegramSecret  string
	WebchatBotToken string
	// TelegramNow is a Telegram message date (Unix seconds) of the run:
	// the gateway leaves out a message older than
	// REPLYFLOW_TELEGRAM_CATCHUP_MAX_AGE, so an accepted case's date is
	// now.
	TelegramNow int64
	// MediaMaxBytes is REPLYFLOW_MEDIA_MAX_BYTES of the run.
	MediaMaxBytes int
	// Run is a number of this run of the corpus alone, which the chats
	// of the accepted cases end in.
	Run int64
}

// runMark is how a case names the run's number.
const runMark = "<% .Run %>"

var corpusFuncs = template.FuncMap{
	"repeat": func(n int, s string) string { return strings.Repeat(s, n) },
	"add":    func(a, b int) int { return a + b },
	"nest": func(n int, open, close string) string {
		return strings.Repeat(open, n) + strings.Repeat(close, n)
	},
	"gzip": func(s string) (string, error) {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write([]byte(s)); err != nil {
			return "", err
		}
		err := zw.Close()
		return buf.String(), err
	},
}

// loadBadInput reads every case under dir, grouped by channel (the
// folder), each group sorted by name with its control cases last.
func loadBadInput(t *testing.T, dir string, vars corpusVars) map[string][]badInputCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*", "*.txt"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no bad-input cases under %s", dir)
	out := map[string][]badInputCase{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		c, err := parseBadInput(filepath.Base(filepath.Dir(file)), strings.TrimSuffix(filepath.Base(file), ".txt"), data, vars)
		require.NoError(t, err, "bad-input case %s", file)
		out[c.Channel] = append(out[c.Channel], c)
	}
	for _, cases := range out {
		slices.SortStableFunc(cases, func(a, b badInputCase) int {
			if a.isControl() != b.isControl() {
				if a.isControl() {
					return 1
				}
				return -1
			}
			return strings.Compare(a.Name, b.Name)
		})
	}
	return out
}

// parseBadInput parses one case file; the error says what is wrong with it.
func parseBadInput(channel, name string, data []byte, vars corpusVars) (badInputCase, error) {
	c := badInputCase{Channel: channel, Name: name, Repeat: 1}
	// notNew is a session named without the run's number.
	notNew := false
	head, body, _ := bytes.Cut(data, []byte("\n---\n"))
	if bytes.HasSuffix(head, []byte("\n---")) {
		head = bytes.TrimSuffix(head, []byte("\n---")) // a case without a body
	}
	body = bytes.TrimSuffix(body, []byte("\n"))
	expand := func(what, text string) (string, error) {
		tmpl, err := template.New(what).Delims("<%", "%>").Funcs(corpusFuncs).Option("missingkey=error").Parse(text)
		if err != nil {
			return "", err
		}
		var out strings.Builder
		err = tmpl.Execute(&out, vars)
		return out.String(), err
	}
	for n, line := range strings.Split(string(head), "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			return c, fmt.Errorf("line %d: %q is no key: value line (is the --- before the body missing?)", n+1, line)
		}
		value = strings.TrimSpace(value)
		var err error
		switch key {
		case "method":
			c.Method = value
		case "path":
			c.Path, err = expand("path", value)
		case "header":
			name, v, ok := strings.Cut(value, ":")
			if !ok {
				return c, fmt.Errorf("line %d: a header is \"header: Name: value\"", n+1)
			}
			v, err = expand("header", strings.TrimSpace(v))
			c.Headers = append(c.Headers, [2]string{strings.TrimSpace(name), v})
		case "expect":
			c.Expect, err = parseOutcome(value)
		case "reason":
			c.Reason, err = expand("reason", value)
		case "session":
			if c.Session, err = expand("session", value); err == nil && !strings.Contains(value, runMark) {
				notNew = true
			}
		case "sign":
			if !slices.Contains(slackSignModes, value) {
				err = fmt.Errorf("sign must be one of %v", slackSignModes)
			}
			c.Sign = value
		case "chunked":
			c.Chunked = value == "yes"
		case "repeat":
			c.Repeat, err = strconv.Atoi(value)
		case "seen":
			c.Seen, err = strconv.Atoi(value)
		case "answer":
			c.Answer, err = expand("answer", value)
		default:
			err = fmt.Errorf("unknown key %q", key)
		}
		if err != nil {
			return c, fmt.Errorf("line %d: %w", n+1, err)
		}
	}
	expanded, err := expand("body", string(body))
	if err != nil {
		return c, fmt.Errorf("body: %w", err)
	}
	c.Body = []byte(expanded)
	if c.Expect.Kind == outcomeAccepted && notNew {
		return c, fmt.Errorf("an accepted case's session ends in %s, where the request names its chat too: a session of an earlier run (go test -count) is on the server still", runMark)
	}
	return c, c.check()
}

func parseOutcome(value string) (badInputOutcome, error) {
	kind, status, _ := strings.Cut(value, " ")
	if kind == "4xx" {
		return badInputOutcome{Kind: outcomeRefused}, nil
	}
	if kind != outcomeAccepted && kind != outcomeIgnored {
		kind, status = outcomeRefused, value
	}
	code, err := strconv.Atoi(status)
	if err != nil {
		return badInputOutcome{}, fmt.Errorf("expect is a 4xx status, 4xx, \"accepted <2xx>\" or \"ignored <2xx>\", got %q", value)
	}
	return badInputOutcome{Kind: kind, Status: code}, nil
}

// check refuses a case that could not fail or could not run.
func (c badInputCase) check() error {
	switch {
	case c.Method == "" || c.Path == "":
		return fmt.Errorf("method and path are required")
	case c.Expect.Kind == "":
		return fmt.Errorf("expect is required")
	case c.Expect.Kind == outcomeRefused && c.Expect.Status != 0 && c.Expect.Status/100 != 4:
		return fmt.Errorf("a refusal is a 4xx status, got %d", c.Expect.Status)
	case c.Expect.Kind != outcomeRefused && c.Expect.Status/100 != 2:
		return fmt.Errorf("an %s case answers 2xx, got %d", c.Expect.Kind, c.Expect.Status)
	case c.Expect.Kind == outcomeAccepted && c.Session == "":
		return fmt.Errorf("an accepted case names its session, to check that it exists")
	case c.Seen != 0 && c.Expect.Kind != outcomeAccepted:
		return fmt.Errorf("seen is for accepted cases")
	case c.Answer != "" && (c.Expect.Kind != outcomeAccepted || c.Channel != "webchat"):
		return fmt.Errorf("answer is for accepted web chat cases")
	case c.Repeat < 1:
		return fmt.Errorf("repeat must be at least 1")
	case c.isControl() && c.Expect.Kind != outcomeAccepted:
		return fmt.Errorf("a control case is accepted")
	}
	return nil
}

// header is the case's value of a header ("" when it sets none).
func (c badInputCase) header(name string) string {
	for _, h := range c.Headers {
		if http.CanonicalHeaderKey(h[0]) == http.CanonicalHeaderKey(name) {
			return h[1]
		}
	}
	return ""
}
